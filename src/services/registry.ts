import type { Entity, EntityType } from '../schemas/entity.js';
import type { SuppliedAttributes } from '../schemas/check.js';
import type { EntityReads, EntityWrites, QueryableEntities } from '../store/store.js';
import { DuplicateKeyError, type CheckedAgainst } from '../store/errors.js';
import { ClientError, notFound, RequestValidationError } from '../errors.js';
import { DuplicateAttribute, toAttributeMap } from '../requests/attributes.js';
import { inKeyOrder, newEntity, updatedEntity } from '../registry/entities.js';
import { storableValueIssues } from '../engine/value-limits.js';
import type { Writer } from '../audit/record.js';
import type { Location, ValidationIssue } from '../schemas/errors.js';
import type { EnforcedSchemas } from '../attribute-schemas/schemas-in-force.js';
import type { WriteWarnings } from './write-warnings.js';
import { mongoFilter, type ConditionTree, type MongoFilter } from '../engine/index.js';

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


/** Sent attributes as a Map, or what makes them unstorable; `at` is where they sit in the body. */
function readAttributes(sent: SuppliedAttributes, at: Location): Map<string, unknown> | ValidationIssue[] {
  const attributes = toAttributeMap(sent);
  if (attributes instanceof DuplicateAttribute) return [attributes.issueAt(at)];
  const issues = [...attributes].flatMap(([key, value]) => storableValueIssues(value, [...at, key]));
  return issues.length > 0 ? issues : attributes;
}

function attributesOf(sent: SuppliedAttributes): Map<string, unknown> {
  const attributes = readAttributes(sent, ['body', 'attributes']);
  if (Array.isArray(attributes)) throw new RequestValidationError(attributes);
  return attributes;
}

/** What an entity breaks of the attribute schemas: issues that refuse its write (`reject`), or warnings (`warn`). */
interface EntitySchemaIssues {
  refusing: readonly ValidationIssue[];
  warnings: readonly ValidationIssue[];
}

const NO_SCHEMA_ISSUES: EntitySchemaIssues = { refusing: [], warnings: [] };

/** The entity registry's operations, shared by the registry routes and the earlier endpoint family. */
export class RegistryService {
  /** `changed` hears of every uri written, once the write is durable (the entity cache listens). */
  constructor(
    private readonly store: EntityReads & EntityWrites & Partial<QueryableEntities>,
    private readonly changed: (uri: string) => void,
    /** The attribute schemas registrations are held to (refused under `reject`, warned of under `warn`). */
    private readonly schemas?: EnforcedSchemas,
    /** The schemas a write was checked against, for the store to hold it to (see CheckedAgainst); undefined: no such check. */
    private readonly checkedAgainst: () => CheckedAgainst | undefined = () => undefined,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /**
   * What an entity's attributes break of the schemas of its type (`at`: where its attributes sit in
   * the body), and whether that refuses the write (`reject`) or is a warning (`warn`).
   */
  private schemaIssues(entity: Entity, at: Location): EntitySchemaIssues {
    const schemas = this.schemas?.enforced;
    if (schemas === undefined) return NO_SCHEMA_ISSUES;
    const attributes = new Map(entity.attributes.map(({ key, value }) => [key, value]));
    const issues: ValidationIssue[] = schemas.registeredViolations(entity.uri, attributes).map((violation) => ({ loc: at, msg: violation, type: 'schema_error' }));
    return schemas.enforcement === 'reject' ? { refusing: issues, warnings: [] } : { refusing: [], warnings: issues };
  }

  async get(uri: string): Promise<Entity> {
    const entity = await this.store.getEntity(uri);
    if (entity === undefined) throw notFound('Entity');
    return inKeyOrder(entity);
  }

  async list(offset: number, limit: number): Promise<Entity[]> {
    return (await this.store.listEntities(offset, limit)).map(inKeyOrder);
  }

  /**
   * Up to `limit` entities under `prefix` (`<type>:`) after `after`, in the store's uri order (see
   * Store.listEntitiesUnder); `narrowedBy`, from `narrowing`, may leave out those its condition does
   * not hold for. Rejects with NarrowingTimedOut when the narrowing ran out of time in the database.
   */
  entitiesUnder(prefix: string, after: string, limit: number, narrowedBy?: MongoFilter): Promise<Entity[]> {
    return this.store.listEntitiesUnder(prefix, after, limit, narrowedBy);
  }

  /**
   * A filter for urisUnder that leaves out, in the store, the registered entities `condition` (a
   * plan's, over the resource) does not hold for; undefined when the store cannot filter, or the
   * condition has no MongoDB filter of at most `maxLength` characters.
   */
  narrowing(condition: ConditionTree, maxLength: number): MongoFilter | undefined {
    const where = this.store.entityFilter;
    // A condition that holds for every entity leaves none out.
    if (where === undefined || condition === true) return undefined;
    const written = mongoFilter(condition, where.layout, maxLength, where.nestedIn);
    return 'filter' in written ? written.filter : undefined;
  }

  count(): Promise<number> {
    return this.store.countEntities();
  }

  /** `warn` hears what the entity breaks of the attribute schemas under `warn` (as every write's `warn` does). */
  async register(sent: EntityRegistration, by: Writer, warn?: WriteWarnings): Promise<Entity> {
    const entity = newEntity(sent, attributesOf(sent.attributes), this.clock().toISOString());
    const { refusing, warnings } = this.schemaIssues(entity, ['body', 'attributes']);
    if (refusing.length > 0) throw new RequestValidationError(refusing);
    try {
      await this.store.createEntity(entity, by, this.checkedAgainst());
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw new ClientError(409, error.message);
      throw error;
    }
    this.changed(entity.uri);
    if (warnings.length > 0) warn?.(warnings);
    return inKeyOrder(entity);
  }

  /**
   * Registers every entity of the list or none (one store transaction), with the rules of
   * `register` for each; 409 names the item whose uri is taken, or given twice in the list.
   */
  async registerMany(sent: readonly EntityRegistration[], by: Writer, warn?: WriteWarnings): Promise<Entity[]> {
    const now = this.clock().toISOString();
    const issues: ValidationIssue[] = [];
    const warnings: ValidationIssue[] = [];
    const entities = sent.map((item, index) => {
      const attributes = readAttributes(item.attributes, ['body', index, 'attributes']);
      if (Array.isArray(attributes)) issues.push(...attributes);
      const entity = newEntity(item, Array.isArray(attributes) ? new Map() : attributes, now);
      if (!Array.isArray(attributes)) {
        const schemaIssues = this.schemaIssues(entity, ['body', index, 'attributes']);
        issues.push(...schemaIssues.refusing);
        warnings.push(...schemaIssues.warnings);
      }
      return entity;
    });
    if (issues.length > 0) throw new RequestValidationError(issues);
    const itemOf = new Map<string, number>();
    entities.forEach((entity, index) => {
      const earlier = itemOf.get(entity.uri);
      if (earlier !== undefined) throw new ClientError(409, `Item ${index}: entity '${entity.uri}' is also item ${earlier} of this call`);
      itemOf.set(entity.uri, index);
    });
    try {
      await this.store.createEntities(entities, by, this.checkedAgainst());
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error;
      const index = error.key === undefined ? undefined : itemOf.get(error.key);
      throw new ClientError(409, index === undefined ? error.message : `Item ${index}: ${error.message}`);
    }
    for (const entity of entities) this.changed(entity.uri);
    if (warnings.length > 0) warn?.(warnings);
    return entities;
  }

  async update(uri: string, change: EntityChange, by: Writer, warn?: WriteWarnings): Promise<Entity> {
    const attributes = attributesOf(change.attributes);
    const now = this.clock().toISOString();
    let warnings: readonly ValidationIssue[] = [];
    const entity = await this.store.updateEntity(
      uri,
      (stored) => {
        const updated = updatedEntity(stored, { type: change.type, attributes, override: change.override }, now);
        // The entity as it will stand is what checks read: it must keep to its schema, whatever the change left alone.
        const schemaIssues = this.schemaIssues(updated, ['body', 'attributes']);
        if (schemaIssues.refusing.length > 0) throw new RequestValidationError(schemaIssues.refusing);
        warnings = schemaIssues.warnings;
        return updated;
      },
      by,
      this.checkedAgainst(),
    );
    if (entity === undefined) throw notFound('Entity');
    this.changed(uri);
    if (warnings.length > 0) warn?.(warnings);
    return inKeyOrder(entity);
  }

  async delete(uri: string, by: Writer): Promise<true> {
    if (!(await this.store.deleteEntity(uri, by))) throw notFound('Entity');
    this.changed(uri);
    return true;
  }
}
