import type { Ajv, AnySchema, ErrorObject, ValidateFunction } from 'ajv';
import type { DecisionRequest } from '../engine/index.js';
import { isTooManyErrors } from '../schemas/validation.js';
import { createSchemaAjv, SCHEMA_PARTS, type SchemaDocument, type SchemaPart } from './schema-document.js';

/** Most violations one check reports: each names an attribute, and a hostile check could break every rule of a schema. */
export const MAX_REPORTED_VIOLATIONS = 10;

/** A compiled schema: what a value breaks, or undefined when it keeps to it. */
type Validator = (value: unknown) => readonly ErrorObject[] | undefined;

/**
 * A schema compiled twice: to stop at the first error (what every check pays, and a valid one, the
 * common case, costs no more), and to find every error, up to a bound, for the answer of one that
 * breaks it. That one is compiled by the first value that breaks the schema: a process compiles every
 * document it is given while its checks wait, and most documents are never broken on most threads.
 */
function compileValidator(firstErrorAjv: Ajv, everyErrorAjv: Ajv, schema: AnySchema): Validator {
  const firstError = firstErrorAjv.compile(schema);
  let everyError: ValidateFunction | undefined;
  return (value) => {
    if (firstError(value)) return undefined;
    everyError ??= everyErrorAjv.compile(schema);
    try {
      everyError(value);
      return everyError.errors ?? firstError.errors ?? [];
    } catch (thrown) {
      if (!isTooManyErrors(thrown)) throw thrown;
      return thrown.tooManyErrors;
    }
  };
}

/** How much of a request's resource is known: all its attributes (a check's), or some (a plan's). */
export type ResourceKnown = 'whole' | 'partial';

/**
 * Keywords that, on the attributes object itself, ask for attributes to be there: of a resource known
 * in part, what is left out is unknown, not missing. The attributes it has are held to every rule.
 */
const ASKS_FOR_PRESENCE = new Set(['required', 'minProperties', 'dependencies', 'dependentRequired']);
const holdsOfPartialResource = (error: ErrorObject) => !(error.instancePath === '' && ASKS_FOR_PRESENCE.has(error.keyword));

/** The compiled schemas of one part: for every entity of it, and by type. */
interface PartValidators {
  all: Validator | undefined;
  byType: ReadonlyMap<string, Validator>;
}

const NO_VIOLATIONS: readonly string[] = Object.freeze([]);

/** The type of an entity as schemas name it: the `<type>:` prefix of its uri, the name of an action. */
const typeOf = (part: SchemaPart, uri: string | undefined): string | undefined => {
  if (uri === undefined || part === 'action') return uri;
  const colon = uri.indexOf(':');
  return colon <= 0 ? undefined : uri.slice(0, colon);
};

/**
 * Attributes as the object a schema describes. Without a prototype, `__proto__` is an ordinary key
 * (assigned, not a setter), and no key finds an inherited value; a third of the cost of Object.fromEntries.
 */
function attributesObject(attributes: ReadonlyMap<string, unknown> | undefined): Record<string, unknown> {
  const object = Object.create(null) as Record<string, unknown>;
  if (attributes !== undefined) for (const [key, value] of attributes) object[key] = value;
  return object;
}

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
    const [firstErrorAjv, everyErrorAjv] = [createSchemaAjv(false), createSchemaAjv(true)];
    const compile = (schema: AnySchema) => compileValidator(firstErrorAjv, everyErrorAjv, schema);
    const compiled = (part: SchemaPart): PartValidators | undefined => {
      const schemas = document[part];
      if (schemas === undefined) return undefined;
      const types = schemas.types ?? {};
      const byType = new Map(Object.keys(types).map((type) => [type, compile(types[type]!)]));
      const all = schemas.attributes === undefined ? undefined : compile(schemas.attributes);
      return all === undefined && byType.size === 0 ? undefined : { all, byType };
    };
    this.parts = { principal: compiled('principal'), resource: compiled('resource'), action: compiled('action'), context: compiled('context') };
  }

  /** Every part has no schema: checks are decided as if there were no document. */
  get empty(): boolean {
    return SCHEMA_PARTS.every((part) => this.parts[part] === undefined);
  }

  /**
   * What the check breaks (at most MAX_REPORTED_VIOLATIONS), or an empty list. With `resourceKnown`
   * `partial` (a plan's: only some of its attributes are known), what it leaves out is not asked for.
   */
  violations(request: DecisionRequest, resourceKnown: ResourceKnown = 'whole'): readonly string[] {
    const { principal, resource, action, context } = this.parts;
    let found: string[] | undefined;
    const add = (broken: readonly string[]) => {
      if (broken.length > 0) (found ??= []).push(...broken);
    };
    if (principal !== undefined) add(this.entityViolations('principal', principal, request.principal.uri, request.principal.attributes));
    if (resource !== undefined) {
      const counted = resourceKnown === 'partial' ? holdsOfPartialResource : undefined;
      add(this.entityViolations('resource', resource, request.resource.uri, request.resource.attributes, counted));
    }
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
      const errors = this.parts[part]?.byType.get(typeOf(part, uri) ?? '')?.(attributesObject(attributes));
      if (errors !== undefined) found.push(...describeAll(part, uri, errors));
    }
    return found.slice(0, MAX_REPORTED_VIOLATIONS);
  }

  /** What the attributes of one entity break; only the errors `counted` keeps, when given. */
  private entityViolations(
    part: SchemaPart,
    validators: PartValidators,
    uri: string | undefined,
    attributes: ReadonlyMap<string, unknown> | undefined,
    counted?: (error: ErrorObject) => boolean,
  ): readonly string[] {
    const ofType = validators.byType.size === 0 ? undefined : validators.byType.get(typeOf(part, uri) ?? '');
    if (validators.all === undefined && ofType === undefined) return NO_VIOLATIONS;
    const value = attributesObject(attributes);
    const broken = validators.all?.(value);
    const brokenOfType = ofType?.(value);
    if (broken === undefined && brokenOfType === undefined) return NO_VIOLATIONS;
    const errors = [...(broken ?? []), ...(brokenOfType ?? [])];
    const kept = counted === undefined ? errors : errors.filter(counted);
    return kept.length === 0 ? NO_VIOLATIONS : describeAll(part, uri, kept);
  }
}

const describeAll = (part: SchemaPart, uri: string | undefined, errors: readonly ErrorObject[]): string[] =>
  errors.slice(0, MAX_REPORTED_VIOLATIONS).map((error) => describe(part, uri, error));
