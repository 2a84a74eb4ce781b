import { createHash } from 'node:crypto';
import type { AuthzenActionSearch, AuthzenSubjectSearch } from '../schemas/authzen.js';
import { actionAndContext, entityInput, entityUri } from '../requests/authzen-request.js';
import type { CheckInput } from '../requests/check-request.js';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import type { RegistryService } from './registry.js';
import type { CheckService } from './checks.js';
import { ClientError } from '../errors.js';
import { AttributeConflict } from '../registry/resolve.js';

/** One page of a search's answer, as AuthZEN writes it: `page` first, then the results. */
export interface SearchAnswer<Result> {
  page: { next_token: string; count: number; total: number };
  results: Result[];
}

/** Registry entities read per store call while subjects are searched: each page of them decided before the next is read. */
const REGISTRY_PAGE = 1000;

/** What a page token holds: the request it continues (a digest) and the last result already answered. */
interface Position {
  request: string;
  after: string;
}

const digestOf = (request: object) => {
  const { page: _page, ...asked } = request as { page?: unknown };
  return createHash('sha256').update(JSON.stringify(asked)).digest('base64url').slice(0, 22);
};

function readToken(token: string | undefined, request: string): string | undefined {
  if (token === undefined || token === '') return undefined;
  let position: Position | undefined;
  try {
    position = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Position;
  } catch {
    // answered below
  }
  if (typeof position?.after !== 'string' || typeof position.request !== 'string') {
    throw new ClientError(400, 'page.token is not a token this server gave: send the next_token of the previous answer, or none to start');
  }
  if (position.request !== request) {
    throw new ClientError(400, 'page.token continues another search: send the same subject, action, resource, context and page.limit as the request that gave it');
  }
  return position.after;
}

/**
 * The page of `keys` (sorted, each naming one result) after the token's position: at most `limit`,
 * with the token of the next page, or '' at the end. Stable while the candidates do not change.
 */
function pageOf<Result>(keys: readonly string[], resultOf: (key: string) => Result, request: string, after: string | undefined, limit: number): SearchAnswer<Result> {
  let start = 0;
  if (after !== undefined) while (start < keys.length && keys[start]! <= after) start++;
  const chosen = keys.slice(start, start + limit);
  const more = start + limit < keys.length;
  const position: Position = { request, after: chosen.at(-1) ?? after ?? '' };
  const next_token = more ? Buffer.from(JSON.stringify(position)).toString('base64url') : '';
  return { page: { next_token, count: chosen.length, total: keys.length }, results: chosen.map(resultOf) };
}

/**
 * AuthZEN's subject and action searches, answered by deciding every candidate as /check would (told to
 * no observer of checks): the
 * registered entities of the subject type, or the actions the policies name. Results come sorted (by
 * uri, by name), so that paging is stable while the registry and the policies do not change.
 */
export class AuthzenSearch {
  constructor(
    private readonly checks: CheckService,
    private readonly registry: RegistryService,
    private readonly snapshots: PolicySnapshots,
    /** The default and the largest page.limit. */
    private readonly maxPageSize: number,
  ) {}

  async subjects(body: AuthzenSubjectSearch): Promise<SearchAnswer<{ type: string; id: string }>> {
    const request = digestOf(body);
    const after = readToken(body.page?.token, request);
    const prefix = entityUri(body.subject.type, '');
    const resource = entityInput(body.resource);
    const supplied = entityInput({ ...body.subject, id: '' }).attributes;
    const action = actionAndContext(body.action, body.context);
    const allowed: string[] = [];
    for (let offset = 0; ; offset += REGISTRY_PAGE) {
      const entities = await this.registry.list(offset, REGISTRY_PAGE);
      const candidates = entities.filter((entity) => entity.uri.startsWith(prefix));
      for (const { uri } of candidates) {
        if (await this.permits({ principal: { uri, attributes: supplied }, resource, ...action })) allowed.push(uri);
      }
      if (entities.length < REGISTRY_PAGE) break;
    }
    allowed.sort();
    return pageOf(allowed, (uri) => ({ type: body.subject.type, id: uri.slice(prefix.length) }), request, after, this.limit(body.page?.limit));
  }

  async actions(body: AuthzenActionSearch): Promise<SearchAnswer<{ name: string }>> {
    const request = digestOf(body);
    const after = readToken(body.page?.token, request);
    const principal = entityInput(body.subject);
    const resource = entityInput(body.resource);
    const named = [...this.snapshots.current.rulesByAction.keys()].sort();
    const allowed: string[] = [];
    for (const name of named) if (await this.permits({ principal, resource, ...actionAndContext({ name }, body.context) })) allowed.push(name);
    return pageOf(allowed, (name) => ({ name }), request, after, this.limit(body.page?.limit));
  }

  private limit(asked: number | undefined): number {
    return Math.min(asked ?? this.maxPageSize, this.maxPageSize);
  }

  /**
   * Whether the check is allowed; one that cannot be decided as asked (a conflicting property) is not.
   * Not a decision anyone asked for: no metric, live figure or decision log line counts it.
   */
  private async permits(input: CheckInput): Promise<boolean> {
    try {
      return await this.checks.allows(input);
    } catch (error) {
      if (error instanceof AttributeConflict) return false;
      throw error;
    }
  }
}
