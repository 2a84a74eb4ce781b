import type { LoadedPolicies, LoadedPolicyChanges } from '../store/store.js';

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
