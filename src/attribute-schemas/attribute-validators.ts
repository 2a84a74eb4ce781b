import type { ErrorObject, ValidateFunction } from 'ajv';
import type { DecisionRequest } from '../engine/index.js';
import { createSchemaAjv, SCHEMA_PARTS, type SchemaDocument, type SchemaPart } from './schema-document.js';

/** Most violations one check reports: each names an attribute, and a hostile check could break every rule of a schema. */
export const MAX_REPORTED_VIOLATIONS = 10;

/** The compiled schemas of one part: for every entity of it, and by type. */
interface PartValidators {
  all: ValidateFunction | undefined;
  byType: ReadonlyMap<string, ValidateFunction>;
}

const NO_VIOLATIONS: readonly string[] = Object.freeze([]);

/** The type of an entity as schemas name it: the `<type>:` prefix of its uri, the name of an action. */
const typeOf = (part: SchemaPart, uri: string | undefined): string | undefined => {
  if (uri === undefined || part === 'action') return uri;
  const colon = uri.indexOf(':');
  return colon <= 0 ? undefined : uri.slice(0, colon);
};

/** An attribute path as a policy writes it: `level`, `address.city`, `tags.0`. */
const attributePath = (error: ErrorObject): string => {
  const path = error.instancePath.slice(1).split('/').map((step) => step.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (error.keyword === 'required') path.push((error.params as { missingProperty: string }).missingProperty);
  if (error.keyword === 'additionalProperties') path.push((error.params as { additionalProperty: string }).additionalProperty);
  return path.filter((step) => step !== '').join('.');
};

/** One broken rule, in words a caller can act on: which attribute of what, the rule, and the schema keyword. */
function describe(part: SchemaPart, uri: string | undefined, error: ErrorObject): string {
  const path = attributePath(error);
  const whose = uri === undefined || part === 'context' ? part : `${part} '${uri}'`;
  const what = path === '' ? `${whose}: attributes` : `${whose}: attribute '${path}'`;
  if (error.keyword === 'required') return `${what} is required (required)`;
  if (error.keyword === 'additionalProperties') return `${what} is not declared by the schema (additionalProperties)`;
  const allowed = error.keyword === 'enum' ? `: ${(error.params as { allowedValues: unknown[] }).allowedValues.map((value) => JSON.stringify(value)).join(', ')}` : '';
  return `${what} ${error.message ?? 'is not valid'}${allowed} (${error.keyword})`;
}

/**
 * The compiled validators of a schema document: compiled once, here, and applied to the attributes
 * of every check as the engine sees them (registered and supplied, merged). Parts and types without a
 * schema cost nothing.
 */
export class AttributeValidators {
  private readonly parts: Readonly<Record<SchemaPart, PartValidators | undefined>>;

  constructor(document: SchemaDocument) {
    const ajv = createSchemaAjv();
    const compiled = (part: SchemaPart): PartValidators | undefined => {
      const schemas = document[part];
      if (schemas === undefined) return undefined;
      const types = schemas.types ?? {};
      const byType = new Map(Object.keys(types).map((type) => [type, ajv.compile(types[type]!)]));
      const all = schemas.attributes === undefined ? undefined : ajv.compile(schemas.attributes);
      return all === undefined && byType.size === 0 ? undefined : { all, byType };
    };
    this.parts = { principal: compiled('principal'), resource: compiled('resource'), action: compiled('action'), context: compiled('context') };
  }

  /** Every part has no schema: checks are decided as if there were no document. */
  get empty(): boolean {
    return SCHEMA_PARTS.every((part) => this.parts[part] === undefined);
  }

  /** What the check breaks (at most MAX_REPORTED_VIOLATIONS), or an empty list. */
  violations(request: DecisionRequest): readonly string[] {
    const { principal, resource, action, context } = this.parts;
    let found: string[] | undefined;
    const add = (broken: string[]) => {
      if (broken.length > 0) (found ??= []).push(...broken);
    };
    if (principal !== undefined) add(this.entityViolations('principal', principal, request.principal.uri, request.principal.attributes));
    if (resource !== undefined) add(this.entityViolations('resource', resource, request.resource.uri, request.resource.attributes));
    if (action !== undefined) add(this.entityViolations('action', action, request.action, request.actionAttributes));
    if (context !== undefined) add(this.entityViolations('context', context, undefined, request.context));
    return found === undefined ? NO_VIOLATIONS : found.slice(0, MAX_REPORTED_VIOLATIONS);
  }

  /**
   * What the attributes of an entity registered under `uri` break: the schemas of its type, as a
   * principal and as a resource (a registered entity may be either). The part-wide schemas are left
   * to checks, which know which side the entity is on.
   */
  registeredViolations(uri: string, attributes: ReadonlyMap<string, unknown>): readonly string[] {
    const found: string[] = [];
    for (const part of ['principal', 'resource'] as const) {
      const validate = this.parts[part]?.byType.get(typeOf(part, uri) ?? '');
      if (validate !== undefined && !validate(Object.fromEntries(attributes))) found.push(...this.describeAll(part, uri, validate));
    }
    return found.slice(0, MAX_REPORTED_VIOLATIONS);
  }

  private entityViolations(part: SchemaPart, validators: PartValidators, uri: string | undefined, attributes: ReadonlyMap<string, unknown> | undefined): string[] {
    const ofType = validators.byType.size === 0 ? undefined : validators.byType.get(typeOf(part, uri) ?? '');
    if (validators.all === undefined && ofType === undefined) return [];
    // Object.fromEntries defines every key as an own property, `__proto__` included.
    const value = Object.fromEntries(attributes ?? []);
    const found: string[] = [];
    if (validators.all !== undefined && !validators.all(value)) found.push(...this.describeAll(part, uri, validators.all));
    if (ofType !== undefined && !ofType(value)) found.push(...this.describeAll(part, uri, ofType));
    return found;
  }

  private describeAll(part: SchemaPart, uri: string | undefined, validate: ValidateFunction): string[] {
    return (validate.errors ?? []).slice(0, MAX_REPORTED_VIOLATIONS).map((error) => describe(part, uri, error));
  }
}
