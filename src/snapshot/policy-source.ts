import type { LoadedPolicies, LoadedPolicyChanges } from '../store/store.js';
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
