import { cpSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedStore } from '../src/store/embedded/store.js';
import type { Entity } from '../src/schemas/entity.js';
import { keyedPolicies } from './engine.js';

const SEED_WRITER = { actor: 'bench', client: '', requestId: '', route: 'seed' };
const ENTITY_BATCH = 1000;

/** A fresh directory, on tmpfs when there is one: seeding should not wait on disk flushes. */
export function benchDirectory(): string {
  return mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'verdict-bench-'));
}

/** The registered principal `user:<index>`, a reader in IT: what the benchmark's uri checks name. */
export function benchEntity(index: number, now: string): Entity {
  return {
    uri: `user:${index}`,
    type: 'principal',
    attributes: [
      { key: 'role', value: 'reader', updated_at: now, registered_at: now },
      { key: 'department', value: 'it', updated_at: now, registered_at: now },
    ],
    registered_at: now,
  };
}

/**
 * Adds to the embedded store in `dataDir` the keyed policies `grant-<from>` up to `grant-<to - 1>`
 * (see keyedPolicies) and the entities `user:0` up to `user:<entities - 1>`.
 */
export async function seed(dataDir: string, policies: { from?: number; to: number }, entities = 0): Promise<void> {
  const store = new EmbeddedStore(dataDir);
  try {
    for (const policy of keyedPolicies(policies.to).slice(policies.from ?? 0)) await store.createPolicy(policy, SEED_WRITER);
    const now = new Date().toISOString();
    for (let start = 0; start < entities; start += ENTITY_BATCH) {
      const batch = Array.from({ length: Math.min(ENTITY_BATCH, entities - start) }, (_, offset) => benchEntity(start + offset, now));
      await store.createEntities(batch, SEED_WRITER);
    }
  } finally {
    await store.close();
  }
}

/** A copy of a seeded data directory, so that one seeding serves several servers. */
export function copyOf(dataDir: string): string {
  const copy = benchDirectory();
  cpSync(dataDir, copy, { recursive: true });
  return copy;
}
