import type { Entity, EntityType } from '../schemas/entity.js';
import type { SuppliedAttributes } from '../schemas/check.js';
import { DuplicateKeyError, type Store } from '../store/store.js';
import { ClientError, notFound, RequestValidationError } from '../errors.js';
import { DuplicateAttribute, toAttributeMap } from './attributes.js';
import { newEntity, updatedEntity } from './entities.js';
import { storableValueIssues } from '../engine/value-limits.js';
import type { Writer } from '../audit/record.js';

export interface EntityRegistration {
  uri?: string | null;
  type?: EntityType | null;
  attributes: SuppliedAttributes;
}

export interface EntityChange {
  type?: EntityType | null;
  attributes: SuppliedAttributes;
  override: boolean;
}

function attributesOf(sent: SuppliedAttributes): Map<string, unknown> {
  const attributes = toAttributeMap(sent);
  if (attributes instanceof DuplicateAttribute) throw new RequestValidationError([attributes.issueAt(['body', 'attributes'])]);
  const issues = [...attributes].flatMap(([key, value]) => storableValueIssues(value, ['body', 'attributes', key]));
  if (issues.length > 0) throw new RequestValidationError(issues);
  return attributes;
}

/** The entity registry's operations, shared by the registry routes and the earlier endpoint family. */
export class RegistryService {
  /** `changed` hears of every uri written, once the write is durable (the entity cache listens). */
  constructor(
    private readonly store: Store,
    private readonly changed: (uri: string) => void,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async get(uri: string): Promise<Entity> {
    const entity = await this.store.getEntity(uri);
    if (entity === undefined) throw notFound('Entity');
    return entity;
  }

  list(offset: number, limit: number): Promise<Entity[]> {
    return this.store.listEntities(offset, limit);
  }

  count(): Promise<number> {
    return this.store.countEntities();
  }

  async register(sent: EntityRegistration, by: Writer): Promise<Entity> {
    const entity = newEntity(sent, attributesOf(sent.attributes), this.clock().toISOString());
    try {
      await this.store.createEntity(entity, by);
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw new ClientError(409, error.message);
      throw error;
    }
    this.changed(entity.uri);
    return entity;
  }

  async update(uri: string, change: EntityChange, by: Writer): Promise<Entity> {
    const attributes = attributesOf(change.attributes);
    const now = this.clock().toISOString();
    const entity = await this.store.updateEntity(
      uri,
      (stored) => updatedEntity(stored, { type: change.type, attributes, override: change.override }, now),
      by,
    );
    if (entity === undefined) throw notFound('Entity');
    this.changed(uri);
    return entity;
  }

  async delete(uri: string, by: Writer): Promise<true> {
    if (!(await this.store.deleteEntity(uri, by))) throw notFound('Entity');
    this.changed(uri);
    return true;
  }
}
