import { timeOf, type DecisionRequest, type ResolvedEntity } from './entity.js';

/** What a path yields when the entity has no value there; it satisfies no condition. */
export const MISSING: unique symbol = Symbol('missing');
/** Reads a path of a part of the check; `request` is the whole check, which the context's `time` alone reads (missing without it). */
export type Lookup = (entity: ResolvedEntity, request?: DecisionRequest) => unknown;

const ARRAY_INDEX = /^(0|[1-9][0-9]*)$/;

/**
 * What a condition path can name besides attributes, per part of a check: a principal's or
 * resource's `uri`, the action's `name`, the context's `time` (the decision's time; a lookup reads
 * each where an entity keeps its uri).
 */
export type NamedValue = 'uri' | 'name' | 'time';

/**
 * Splits a dotted condition path. Valid paths are `uri` (`name` for the action, `time` for the
 * context) and `attributes.<key>` followed by any number of `.<key>` or `.<index>` steps into
 * nested objects and lists. Returns the steps after `attributes`, or a message saying what is wrong.
 */
export function parsePath(path: string, named: NamedValue = 'uri'): { kind: 'uri' } | { kind: 'attribute'; steps: string[] } | { error: string } {
  if (path === named) return { kind: 'uri' };
  const parts = path.split('.');
  if (parts[0] !== 'attributes' || parts.length < 2) {
    return { error: `path must be '${named}' or 'attributes.<key>' (dotted, e.g. 'attributes.address.city')` };
  }
  const steps = parts.slice(1);
  if (steps.some((step) => step === '')) return { error: 'path has an empty segment' };
  return { kind: 'attribute', steps };
}

/** The list position a path step names (`0`, `12`; not `01` or `-1`), or undefined when it names none. */
export function arrayIndex(step: string): number | undefined {
  return ARRAY_INDEX.test(step) ? Number(step) : undefined;
}

function step(container: unknown, key: string): unknown {
  if (Array.isArray(container)) {
    const index = arrayIndex(key);
    return index !== undefined && index < container.length ? container[index] : MISSING;
  }
  if (typeof container === 'object' && container !== null && Object.hasOwn(container, key)) {
    return (container as Record<string, unknown>)[key];
  }
  return MISSING;
}

/** Compiles a valid path into a lookup that never consults a prototype chain (`name`, the action's, reads the uri). */
export function compileLookup(path: string): Lookup {
  if (path === 'time') return (_entity, request) => (request === undefined ? MISSING : timeOf(request));
  const parsed = parsePath(path, path === 'name' ? 'name' : 'uri');
  if ('error' in parsed) throw new Error(`invalid path '${path}': ${parsed.error}`);
  if (parsed.kind === 'uri') return (entity) => entity.uri ?? MISSING;
  const [first, ...rest] = parsed.steps as [string, ...string[]];
  if (rest.length === 0) return (entity) => attributeOf(entity.attributes, first);
  return (entity) => {
    const value = attributeOf(entity.attributes, first);
    return value === MISSING ? MISSING : stepInto(value, rest);
  };
}

/** The lookup of the steps after `attributes.` in a map of attributes that may be absent (a check without context). */
export function compileAttributeLookup(steps: readonly string[]): (attributes: ReadonlyMap<string, unknown> | undefined) => unknown {
  const [first, ...rest] = steps as [string, ...string[]];
  return (attributes) => {
    const value = attributes === undefined ? MISSING : attributeOf(attributes, first);
    return value === MISSING ? MISSING : stepInto(value, rest);
  };
}

/** The value of an attribute, or MISSING: one lookup, and a second only for a value that reads as undefined. */
function attributeOf(attributes: ReadonlyMap<string, unknown>, key: string): unknown {
  const value = attributes.get(key);
  return value !== undefined || attributes.has(key) ? value : MISSING;
}

function stepInto(value: unknown, steps: readonly string[]): unknown {
  for (const key of steps) {
    value = step(value, key);
    if (value === MISSING) return MISSING;
  }
  return value;
}
