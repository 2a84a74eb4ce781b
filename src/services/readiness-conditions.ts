import type { Lifecycle, PolicyReads } from '../store/store.js';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import type { FeedHealth } from '../snapshot/follow-changes.js';
import type { BulkPool } from '../pool/bulk-pool.js';
import type { PolicyDirectory } from '../policy-files/policy-directory.js';
import type { KeyRing } from '../admin-keys.js';
import type { TokenVerifier } from '../identity/verifier.js';
import type { KeySetStatus } from '../identity/key-set.js';
import { within, type ReadinessConditions } from './readiness.js';

/** A store that takes longer than this to answer a readiness probe is reported as not ready. */
export const STORE_PROBE_TIMEOUT_MS = 2000;

/** What /ready asks about. */
export interface ReadinessSubjects {
  store: PolicyReads & Lifecycle;
  snapshots: PolicySnapshots;
  feed: FeedHealth;
  bulk?: BulkPool;
  policyFiles?: PolicyDirectory;
  /** The admin keys, when they are read from a file that may be reloaded. */
  adminKeysFile?: KeyRing;
  /** The token verifier, with its key sets (`--tokens`). */
  tokens?: TokenVerifier;
}

const since = (time: number) => new Date(time).toISOString();

/**
 * The conditions /ready reports. A store or a snapshot rebuild failing degrades: every process on a
 * shared store fails at once, and taking them all out of service would stop decisions that the last
 * snapshot can still make.
 */
export function readinessConditions({ store, snapshots, feed, bulk, policyFiles, adminKeysFile, tokens }: ReadinessSubjects): ReadinessConditions {
  return {
    required: {
      // Until a key set is read once, no token of its issuer can be accepted.
      ...(tokens && { tokenKeySets: () => keySetsNotLoaded(tokens) }),
      // Threads start with the first bulk that needs them; until then, none running is no fault.
      workers: () => (bulk === undefined || !bulk.inUse || bulk.threads > 0 ? undefined : 'no worker thread is running'),
    },
    degrading: {
      snapshot: () => {
        const failing = snapshots.failing;
        if (failing === undefined) return undefined;
        const attempts = `${failing.failures} attempt${failing.failures === 1 ? '' : 's'}`;
        return `rebuilds failing since ${since(failing.since)} (${attempts}): ${failing.error.message}`;
      },
      store: async () => {
        try {
          await within(store.policyRevision(), STORE_PROBE_TIMEOUT_MS, `no answer within ${STORE_PROBE_TIMEOUT_MS} ms`);
          return undefined;
        } catch (error) {
          return `unreachable: ${(error as Error).message}`;
        }
      },
      // Index builds, the backfill and the recount: searches are slower meanwhile, and $count on a large registry answers that it cannot yet; never wrong.
      ...(store.maintenance && { storeMaintenance: () => store.maintenance!.status() }),
      // Without the feed, writes by other processes are not applied here: decisions may be stale.
      feed: () => {
        const lost = feed.interruption;
        return lost && `interrupted since ${since(lost.since)}, retrying: ${lost.reason}`;
      },
      // Invalid policy files never replace the last good set, which keeps deciding (there is one:
      // invalid files at start stop the start).
      ...(policyFiles && {
        policyFiles: () => {
          const rejected = policyFiles.rejected;
          if (rejected === undefined) return undefined;
          return `changed files not applied since ${since(rejected.since)}, serving revision ${snapshots.current.revision}: ${rejected.problems.join('; ')}`;
        },
      }),
      // Nor does a keys file that no longer parses replace the keys in force: a typo would lock every operator out.
      ...(adminKeysFile && {
        adminKeys: () => {
          const rejected = adminKeysFile.rejected;
          if (rejected === undefined) return undefined;
          return `not reloaded since ${since(rejected.since)}: ${rejected.error.message}; the keys it held before stay in force`;
        },
      }),
      // A refresh that fails keeps the keys fetched before: tokens still verify, but rotations are not followed.
      ...(tokens && { tokenKeySetRefresh: () => keySetsFailing(tokens) }),
    },
  };
}

/** A fetch under way, as /ready says it: for how long. */
const underWay = (set: KeySetStatus) => (set.fetching_for_ms === null ? '' : `; a fetch under way for ${set.fetching_for_ms} ms`);

function keySetsNotLoaded(tokens: TokenVerifier): string | undefined {
  const unread = tokens.status().filter((set) => set.loaded_at === null);
  return unread.length === 0 ? undefined : unread.map((set) => `key set '${set.name}' not fetched yet: ${set.last_error ?? 'fetching'}${underWay(set)}`).join('; ');
}

function keySetsFailing(tokens: TokenVerifier): string | undefined {
  const failing = tokens.status().filter((set) => set.loaded_at !== null && set.last_error !== null);
  return failing.length === 0 ? undefined : failing.map((set) => `key set '${set.name}' refresh failing (keys of ${set.loaded_at} in use): ${set.last_error}${underWay(set)}`).join('; ');
}
