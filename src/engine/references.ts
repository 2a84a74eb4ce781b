import { REQUEST_PARTS, timeOf, type DecisionRequest, type RequestPart } from './entity.js';
import { compileAttributeLookup, MISSING, parsePath, type NamedValue } from './paths.js';

/** What a path can name besides attributes in each part of a check (see parsePath). */
export const NAMED_VALUE: Readonly<Record<RequestPart, NamedValue>> = { principal: 'uri', resource: 'uri', action: 'name', context: 'time' };

/** A `value_from` read: the part of the check it names, and the path into that part. */
export interface Reference {
  part: RequestPart;
  path: string;
}

const isPart = (text: string): text is RequestPart => (REQUEST_PARTS as readonly string[]).includes(text);

/** Splits a `value_from` such as `principal.attributes.email`, or says what is wrong with it. */
export function parseReference(text: string): Reference | { error: string } {
  const dot = text.indexOf('.');
  const part = dot === -1 ? text : text.slice(0, dot);
  if (!isPart(part) || dot === -1) return { error: "value_from must start with 'principal.', 'resource.', 'action.' or 'context.'" };
  const path = text.slice(dot + 1);
  const parsed = parsePath(path, NAMED_VALUE[part]);
  if ('error' in parsed) return { error: `value_from: after '${part}.', the ${parsed.error}` };
  return { part, path };
}

/** Reads a value of the whole request: MISSING where the request has nothing there. */
export type RequestLookup = (request: DecisionRequest) => unknown;

/** Compiles a valid `value_from` into a lookup of the request that never consults a prototype chain. */
export function compileReference(text: string): RequestLookup {
  const reference = parseReference(text);
  if ('error' in reference) throw new Error(`invalid reference '${text}': ${reference.error}`);
  const { part, path } = reference;
  const parsed = parsePath(path, NAMED_VALUE[part]) as Exclude<ReturnType<typeof parsePath>, { error: string }>;
  if (parsed.kind === 'uri') {
    if (part === 'action') return (request) => request.action;
    if (part === 'context') return timeOf;
    return part === 'principal' ? (request) => request.principal.uri ?? MISSING : (request) => request.resource.uri ?? MISSING;
  }
  if (parsed.steps.length === 1) return topLevelLookup(part, parsed.steps[0]!);
  const lookup = compileAttributeLookup(parsed.steps);
  switch (part) {
    case 'principal':
      return (request) => lookup(request.principal.attributes);
    case 'resource':
      return (request) => lookup(request.resource.attributes);
    case 'action':
      return (request) => lookup(request.actionAttributes);
    case 'context':
      return (request) => lookup(request.context);
  }
}

/**
 * A top-level attribute of a part of the request, the common reference, read with one map lookup
 * (attribute maps hold JSON values, never undefined): a relation costs about what a constant does.
 */
function topLevelLookup(part: RequestPart, key: string): RequestLookup {
  const read = (attributes: ReadonlyMap<string, unknown> | undefined) => {
    const value = attributes?.get(key);
    return value !== undefined ? value : MISSING;
  };
  switch (part) {
    case 'principal':
      return (request) => read(request.principal.attributes);
    case 'resource':
      return (request) => read(request.resource.attributes);
    case 'action':
      return (request) => read(request.actionAttributes);
    case 'context':
      return (request) => read(request.context);
  }
}
