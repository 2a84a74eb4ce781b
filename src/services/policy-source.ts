import type { Policy } from '../schemas/policy.js';
import type { LoadedPolicies, LoadedPolicyChanges, Store } from '../store/store.js';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import type { SchemaDocument } from '../attribute-schemas/schema-document.js';

/**
 * Where the snapshot builder reads policies: the store, or a directory of policy files (see
 * src/policy-files/). Each yields the whole set with a revision that grows with every change;
 * nothing downstream of the snapshot knows which it is.
 */
export interface PolicySource {
  loadPolicies(): Promise<LoadedPolicies>;
  /** Only what changed after revision `since`, when the source can tell; else the whole set (see Store.loadPolicies). */
  loadPolicies(since: number): Promise<LoadedPolicyChanges>;
  /** The revision loadPolicies would return now, without loading anything. */
  policyRevision(): Promise<number>;
}

/**
 * `source` with the schema document of a file (`--schemas`, or schemas.json beside policy files; none:
 * undefined) in place of any the source holds: with a file, the file is where schemas are changed.
 */
export function withSchemasFromFile(source: PolicySource, document: SchemaDocument | undefined): PolicySource {
  const schemas = document && { document, version: 0 };
  const loadPolicies = async (since?: number): Promise<LoadedPolicyChanges> => {
    const loaded = await (since === undefined ? source.loadPolicies() : source.loadPolicies(since));
    if ('changes' in loaded) return loaded;
    const { schemas: stored, ...policies } = loaded;
    return schemas === undefined ? policies : { ...policies, schemas };
  };
  return { loadPolicies: loadPolicies as PolicySource['loadPolicies'], policyRevision: () => source.policyRevision() };
}

/** Where policy reads (`GET /admin/policies`, `GET /admin/policies/{name}`) are answered from. */
export interface PolicyReader {
  all(): Promise<readonly Policy[]>;
  named(name: string): Promise<Policy | undefined>;
}

/** The writes a policy source takes: the store's. Policies from files have none: only their files change them. */
export type PolicyWriter = Pick<Store, 'createPolicy' | 'replacePolicy' | 'deletePolicy' | 'restorePolicy'>;

/**
 * The policies' two roles: reading them, and, unless they come from files, writing them. Policies from
 * files are read as the set in force; `filesDir` says where they are changed instead of written.
 */
export type PolicyRoles = { reader: PolicyReader; writer: PolicyWriter } | { reader: PolicyReader; writer: undefined; filesDir: string };

/** Policies kept in the store: read from it, which every write reaches first, and written to it. */
export function storePolicies(store: Store): PolicyRoles {
  return { reader: { all: async () => (await store.loadPolicies()).policies, named: (name) => store.getPolicy(name) }, writer: store };
}

/** Policies from a directory of files (`--policies`): read as the snapshot holds them, never written. */
export function filePolicies(snapshots: PolicySnapshots, filesDir: string): PolicyRoles {
  const reader: PolicyReader = {
    all: async () => snapshots.policies,
    named: async (name) => snapshots.policies.find((stored) => stored.name === name),
  };
  return { reader, writer: undefined, filesDir };
}
