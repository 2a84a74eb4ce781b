import type { ValidateFunction } from 'ajv';
import type { FastifySchemaValidationError } from 'fastify';
import { checkRequestListSchema, type CheckRequest } from '../schemas/check.js';
import { compiledOnFirstUse, compileListingErrors, validationIssues } from '../schemas/validation.js';
import { CLAIMS_ATTRIBUTE, FormsDisagree, readCheckRequest, sideWordingOf, type CheckInput, type SideWording } from './check-request.js';
import { ClientError, RequestValidationError } from '../errors.js';
import type { ValidationIssue } from '../schemas/errors.js';
import { requestLimitIssues } from './request-limits.js';
import { isValidCheckList } from './check-shape.js';
import type { Config } from '../config/config.js';
import { ANY_ACTION } from '../engine/actions.js';

/** What bounds a bulk body, and how its items are read (see SideWording); plain data, so that it travels to the pool's workers. */
export type BulkLimits = Pick<Config, 'bulkCheckMaxRequests' | 'maxJsonDepth' | 'maxStringLength' | 'maxAnswerSize'> & { sideWording: SideWording };

/** The bulk limits of a configuration. */
export const bulkLimitsOf = (config: Config): BulkLimits => ({
  bulkCheckMaxRequests: config.bulkCheckMaxRequests,
  maxJsonDepth: config.maxJsonDepth,
  maxStringLength: config.maxStringLength,
  maxAnswerSize: config.maxAnswerSize,
  sideWording: sideWordingOf(config),
});

export type BulkValidator = ValidateFunction<CheckRequest[]>;

/** The validator of bulk bodies that the hand check refuses (see readBulkBody): compiled by the first such body. */
export function compileBulkValidator(): BulkValidator {
  return compiledOnFirstUse(() => compileListingErrors<CheckRequest[]>(checkRequestListSchema));
}

/**
 * Reads every item of a schema-valid bulk with `read` (given where the item sits in the body): any
 * unusable item is 422 for the whole call, with every issue; an item whose two forms disagree is
 * 400 for the whole call, its detail starting `Item <i>: `.
 */
export function readBulkItems<Request, Input>(requests: readonly Request[], read: (request: Request, at: (string | number)[]) => Input | ValidationIssue[]): Input[] {
  const inputs: Input[] = [];
  const issues: ValidationIssue[] = [];
  requests.forEach((request, index) => {
    let input: Input | ValidationIssue[];
    try {
      input = read(request, ['body', index]);
    } catch (error) {
      if (error instanceof FormsDisagree) throw new ClientError(400, `Item ${index}: ${error.detail}`);
      throw error;
    }
    if (Array.isArray(input)) issues.push(...input);
    else inputs.push(input);
  });
  if (issues.length > 0) throw new RequestValidationError(issues);
  return inputs;
}

/** What is wrong with a bulk body as a list, before its items are looked at: empty, or too long. */
export function bulkListError(body: unknown, maxRequests: number): ClientError | undefined {
  if (!Array.isArray(body)) return undefined;
  if (body.length === 0) return new ClientError(400, 'Empty request list');
  if (body.length > maxRequests) return new ClientError(400, `Too many requests. Maximum allowed: ${maxRequests}`);
  return undefined;
}

/**
 * The body of `POST /check/bulk`, from its JSON text to checks ready to resolve, with the errors
 * of the contract in its order: malformed JSON 400, not a list 422, `[]` 400, over the limit 400,
 * nested too deep or too long a string 422, any item invalid 422 (the whole call), an item whose
 * two forms disagree 400 (the whole call). The front and the pool's workers both read bodies here.
 */
export function readBulkBody(text: string, validate: BulkValidator, limits: BulkLimits): CheckInput[] {
  const maxRequests = limits.bulkCheckMaxRequests;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new ClientError(400, `Malformed JSON body: ${(error as Error).message}`);
  }
  const listError = bulkListError(body, maxRequests);
  if (listError !== undefined) throw listError;
  // The common body passes the hand check; any other is judged by the limits walk and Ajv, whose details the 422 carries.
  if (!(Array.isArray(body) && isValidCheckList(body, limits))) {
    const tooBig = requestLimitIssues(body, limits, text.length);
    if (tooBig.length > 0) throw new RequestValidationError(tooBig);
    if (!validate(body)) {
      throw new RequestValidationError(validationIssues(validate.errors as FastifySchemaValidationError[], 'body'));
    }
  }
  return readBulkItems(body as CheckRequest[], (request, at) => readCheckRequest(request, at, limits.sideWording));
}

/**
 * Whether only the front can decide a check as asked: it names a registered entity (the front holds
 * the entity cache), or its principal names a credential (a token, or a `claims` attribute, which only
 * a verified token may give where tokens are verified): identity is settled at the front, once, and a
 * worker never decides on a credential it cannot verify; or it asks about the action `*`, which the
 * front refuses. Read from the parsed check, never from bytes.
 */
export const onlyTheFrontDecides = (input: CheckInput): boolean =>
  input.principal.uri !== undefined ||
  input.resource.uri !== undefined ||
  input.principal.credential !== undefined ||
  input.principal.attributes.has(CLAIMS_ATTRIBUTE) ||
  // Refused where checks are resolved: rare, and a client's mistake.
  input.action === ANY_ACTION;

/** The end of every key that names a uri: `uri`, `principal_uri`, `resource_uri`. */
const URI_KEY_END = Buffer.from('uri"');
const [COLON, QUOTE] = [':'.charCodeAt(0), '"'.charCodeAt(0)];
const isJsonSpace = (byte: number | undefined) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;

/**
 * Whether a bulk body plainly gives a uri as a string (`"uri":"…"`, `"principal_uri": "…"`): the
 * front, which holds the entity cache, decides such a body itself rather than have a worker read it
 * only to hand it back. One pass over the bytes, no parsing: an attribute key ending in `uri` is a
 * false alarm (the front decides that body, as well), and a uri written otherwise (a key with
 * escapes) is still found by the worker, which hands the body back as before.
 */
export const plainlyNamesUri = (body: Buffer): boolean => plainlyGivesString(body, URI_KEY_END);

/** The end of the key of a principal's token. */
const TOKEN_KEY_END = Buffer.from('"token"');

/**
 * Whether a bulk body plainly gives a token (`"token": "…"`): the front, which verifies tokens,
 * decides such a body itself rather than have a worker read it only to hand it back. A token written
 * otherwise is found by the worker once it has parsed the body (onlyTheFrontDecides), and handed back.
 */
export const plainlyNamesToken = (body: Buffer): boolean => plainlyGivesString(body, TOKEN_KEY_END);

/** Whether `body` has a key ending in `keyEnd` followed by a colon and a string. */
function plainlyGivesString(body: Buffer, keyEnd: Buffer): boolean {
  for (let at = body.indexOf(keyEnd); at !== -1; at = body.indexOf(keyEnd, at + keyEnd.length)) {
    let next = at + keyEnd.length;
    while (isJsonSpace(body[next])) next++;
    if (body[next] !== COLON) continue;
    next++;
    while (isJsonSpace(body[next])) next++;
    if (body[next] === QUOTE) return true;
  }
  return false;
}
