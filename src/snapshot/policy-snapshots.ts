import { compile, type Snapshot } from '../engine/index.js';
import type { Store } from '../store/store.js';
import type { Policy } from '../schemas/policy.js';

/**
 * Holds the snapshot that checks are evaluated against and rebuilds it from the store after each
 * policy change. Rebuilds run one at a time and a snapshot never replaces a newer one.
 */
export class PolicySnapshots {
  private rebuilding: Promise<Snapshot>;
  /** When `current` was built (epoch milliseconds). */
  builtAt = Date.now();

  private constructor(
    private readonly store: Store,
    public current: Snapshot,
    /** The policies `current` was compiled from, for workers that compile their own copy. */
    public policies: Policy[],
  ) {
    this.rebuilding = Promise.resolve(current);
  }

  static async load(store: Store): Promise<PolicySnapshots> {
    const { policies, revision } = await store.loadPolicies();
    return new PolicySnapshots(store, compile(policies, revision), policies);
  }

  /** Resolves once the current snapshot includes every policy write that had completed when it was called. */
  refresh(): Promise<Snapshot> {
    this.rebuilding = this.rebuilding.then(async () => {
      if ((await this.store.policyRevision()) <= this.current.revision) return this.current;
      const { policies, revision } = await this.store.loadPolicies();
      if (revision > this.current.revision) {
        this.current = compile(policies, revision);
        this.policies = policies;
        this.builtAt = Date.now();
      }
      return this.current;
    });
    return this.rebuilding;
  }
}
