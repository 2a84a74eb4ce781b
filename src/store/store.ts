import type { Policy } from '../schemas/policy.js';
import type { Entity } from '../schemas/entity.js';

/** A policy or entity that already exists under the same name or uri. */
export class DuplicateKeyError extends Error {}

export interface PolicySet {
  /** Increases with every policy write; the snapshot built from this set carries it. */
  revision: number;
  /** In creation order. */
  policies: Policy[];
}

/**
 * Where policies and entities live. Every write resolves only once it is durable. Implementations:
 * `embedded.ts` (SQLite, the default).
 */
export interface Store {
  loadPolicies(): Promise<PolicySet>;
  getPolicy(name: string): Promise<Policy | undefined>;
  /** Rejects with DuplicateKeyError when the name is taken. */
  createPolicy(policy: Policy): Promise<void>;
  /** Replaces in place, keeping the creation order; false when there is no such policy. */
  replacePolicy(policy: Policy): Promise<boolean>;
  deletePolicy(name: string): Promise<boolean>;

  getEntity(uri: string): Promise<Entity | undefined>;
  /** In registration order. */
  listEntities(offset: number, limit: number): Promise<Entity[]>;
  countEntities(): Promise<number>;
  /** Rejects with DuplicateKeyError when the uri is taken. */
  createEntity(entity: Entity): Promise<void>;
  /** Applies `change` to the stored entity atomically; undefined when there is no such entity. */
  updateEntity(uri: string, change: (entity: Entity) => Entity): Promise<Entity | undefined>;
  deleteEntity(uri: string): Promise<boolean>;

  close(): Promise<void>;
}
