import type { Policy } from '../schemas/policy.js';
import type { PolicyReads, PolicyWrites } from '../store/store.js';
import type { PolicyDirectory } from '../policy-files/policy-directory.js';

/** Where policy reads (`GET /admin/policies`, `GET /admin/policies/{name}`) are answered from. */
export interface PolicyReader {
  /** Every policy, shadows included, in creation order. */
  all(): Promise<readonly Policy[]>;
  named(name: string): Promise<Policy | undefined>;
  /** Where the policy named was written: `admin API`, or `file <name>` of a policy directory. */
  sourceOf(name: string): string;
}

/** The writes a policy source takes: the store's. Policies from files have none: only their files change them. */
export type PolicyWriter = PolicyWrites;

/**
 * The policies' two roles: reading them, and, unless they come from files, writing them. Policies from
 * files are read as the set in force; `filesDir` says where they are changed instead of written.
 */
export type PolicyRoles = { reader: PolicyReader; writer: PolicyWriter } | { reader: PolicyReader; writer: undefined; filesDir: string };

/** Policies kept in the store: read from it, which every write reaches first, and written to it. */
export function storePolicies(store: PolicyReads & PolicyWrites): PolicyRoles {
  return { reader: { all: async () => (await store.loadPolicies()).policies, named: (name) => store.getPolicy(name), sourceOf: () => 'admin API' }, writer: store };
}

/** Policies from a directory of files (`--policies`): read as the directory has them in force (shadows too), never written. */
export function filePolicies(directory: PolicyDirectory): PolicyRoles {
  const reader: PolicyReader = {
    all: async () => directory.policies,
    named: async (name) => directory.policies.find((policy) => policy.name === name),
    sourceOf: (name) => `file ${directory.fileOf(name)}`,
  };
  return { reader, writer: undefined, filesDir: directory.dir };
}
