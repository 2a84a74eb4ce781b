import { createHash } from 'node:crypto';
import type { AuthzenActionSearch, AuthzenResourceSearch, AuthzenSubjectSearch } from '../schemas/authzen.js';
import { actionAndContext, entityInput, subjectInput } from '../requests/authzen-request.js';
import { entityUri } from '../engine/scope.js';
import { ANY_ACTION } from '../engine/actions.js';
import type { CheckInput } from '../requests/check-request.js';
import type { DecisionRequest, MongoFilter } from '../engine/index.js';
import { PLAN_ANSWER_GROWTH } from '../config/config.js';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import type { RegistryService } from './registry.js';
import type { CheckService } from './checks.js';
import type { PlanService } from './plans.js';
import { conditionTest } from './condition-test.js';
import { ClientError } from '../errors.js';
import { allowsNothing } from '../decide/undecidable-answers.js';
import type { RegisteredAttributes } from '../registry/resolve.js';
import { attributeMapOf } from '../registry/entities.js';
import { NarrowingTimedOut } from '../store/errors.js';
import type { Entity } from '../schemas/entity.js';
import { betweenSlices } from './work-in-slices.js';

/** One page of a search's answer, as AuthZEN writes it: `page` first, then the results. */
export interface SearchAnswer<Result> {
  /** `total` only when it is known: every result is in this answer. */
  page: { next_token: string; count: number; total?: number };
  results: Result[];
}

/** Candidates read per store call while a search goes through them: each slice is decided, and other requests served, before the next is read. */
const SLICE = 200;

/** What a page token holds: the request it continues (a digest) and the last candidate already answered for. */
interface Position {
  request: string;
  after: string;
}

const digestOf = (request: object) => {
  const { page: _page, ...asked } = request as { page?: unknown };
  return createHash('sha256').update(JSON.stringify(asked)).digest('base64url').slice(0, 22);
};

/** The position a page token names, or undefined when none is sent (the first page). */
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


const tokenAt = (request: string, after: string) => Buffer.from(JSON.stringify({ request, after } satisfies Position)).toString('base64url');

/**
 * The page of `keys` (sorted, each naming one result) after the token's position: at most `limit`,
 * with the token of the next page, or '' at the end. Stable while the candidates do not change.
 */
function pageOf<Result>(keys: readonly string[], resultOf: (key: string) => Result, request: string, after: string | undefined, limit: number): SearchAnswer<Result> {
  let start = 0;
  if (after !== undefined) while (start < keys.length && keys[start]! <= after) start++;
  const chosen = keys.slice(start, start + limit);
  const more = start + limit < keys.length;
  const next_token = more ? tokenAt(request, chosen.at(-1) ?? after ?? '') : '';
  return { page: { next_token, count: chosen.length, total: keys.length }, results: chosen.map(resultOf) };
}

/** Whether a registered entity, as its row was read, is a result. */
type CandidateTest = (candidate: Entity) => boolean | Promise<boolean>;

/** How a search finds its results: each candidate decided by `permits`, once the store has left out, by `narrowedBy`, some that cannot be. */
interface Candidates {
  permits: CandidateTest;
  narrowedBy?: MongoFilter;
}

/** What one request's pass over the registry found: the allowed uris, and where the next page starts (undefined: nowhere, they are all answered). */
interface Scanned {
  allowed: string[];
  resumeAfter: string | undefined;
}

/**
 * AuthZEN's searches. Subjects and resources are found among the registered entities of the type
 * asked, read in uri order a slice at a time from the page token's position, each decided as /check
 * would (told to no observer of checks); a page ends once it holds `page.limit` results and another is
 * known to follow, when the candidates end, or after `--search-max-candidates` of them, whichever
 * comes first. Resources are decided by the plan of the subject, action and context when it is exact,
 * else one check each; on a store that filters in the database (MongoDB), an exact plan's filter
 * first narrows the candidates read, unless the resource has properties (they merge with the
 * registered attributes, which are all the database sees). The candidates are then those the
 * database returns, each still decided here, so answers are as exact as without it; a page token
 * names the last candidate decided either way, and the bound counts the candidates returned.
 * Actions are those the policies name, all decided at once (there are few).
 * Paging is stable while the registry and the policies do not change.
 */
export class AuthzenSearch {
  constructor(
    private readonly checks: CheckService,
    private readonly plans: PlanService,
    private readonly registry: RegistryService,
    private readonly snapshots: PolicySnapshots,
    private readonly limits: {
      /** The default and the largest page.limit. */
      maxPageSize: number;
      /** The most candidates one request decides. */
      searchMaxCandidates: number;
      /** The longest plan condition (its MongoDB filter may be longer, as a plan answer's may). */
      maxPlanSize: number;
    },
  ) {}

  async subjects(body: AuthzenSubjectSearch): Promise<SearchAnswer<{ type: string; id: string }>> {
    const resource = entityInput(body.resource);
    const supplied = entityInput({ ...body.subject, id: '' }).attributes;
    const action = actionAndContext(body.action, body.context);
    return this.search(body, body.subject.type, () => ({ permits: (candidate) => this.permits({ principal: { uri: candidate.uri, attributes: supplied }, resource, ...action }, candidate) }));
  }

  async resources(body: AuthzenResourceSearch): Promise<SearchAnswer<{ type: string; id: string }>> {
    const principal = subjectInput(body.subject);
    const supplied = entityInput({ ...body.resource, id: '' }).attributes;
    const action = actionAndContext(body.action, body.context);
    const asked = (uri: string | undefined): CheckInput => ({ principal, resource: { uri, attributes: supplied }, ...action });
    return this.search(body, body.resource.type, async () => {
      const condition = await this.plans.exactCondition(asked(undefined));
      // Nothing is allowed: no candidate need be read.
      if (condition === false) return undefined;
      if (condition === undefined) return { permits: (candidate) => this.permits(asked(candidate.uri), candidate) };
      const decided = conditionTest(condition);
      const narrowedBy = supplied.size === 0 ? this.registry.narrowing(condition, (PLAN_ANSWER_GROWTH - 1) * this.limits.maxPlanSize) : undefined;
      return { permits: (candidate) => this.permits(asked(candidate.uri), candidate, decided), narrowedBy };
    });
  }

  async actions(body: AuthzenActionSearch): Promise<SearchAnswer<{ name: string }>> {
    const request = digestOf(body);
    const after = readToken(body.page?.token, request);
    const principal = subjectInput(body.subject);
    const resource = entityInput(body.resource);
    // The actions rules name: a rule of every action ('*') names none of its own.
    const named = [...this.snapshots.current.rulesByAction.keys()].filter((name) => name !== ANY_ACTION).sort();
    const allowed: string[] = [];
    for (const name of named) if (await this.permits({ principal, resource, ...actionAndContext({ name }, body.context) }, undefined)) allowed.push(name);
    return pageOf(allowed, (name) => ({ name }), request, after, this.limit(body.page?.limit));
  }

  /**
   * The page a subject or resource search answers: the registered entities of `type` that the
   * candidates `finding` makes (once the page token is read) allow, from the token's position; none
   * when it makes none.
   */
  private async search(
    body: AuthzenSubjectSearch | AuthzenResourceSearch,
    type: string,
    finding: () => Candidates | undefined | Promise<Candidates | undefined>,
  ): Promise<SearchAnswer<{ type: string; id: string }>> {
    const request = digestOf(body);
    const after = readToken(body.page?.token, request);
    const prefix = entityUri(type, '');
    const candidates = await finding();
    const { allowed, resumeAfter } = candidates === undefined ? { allowed: [], resumeAfter: undefined } : await this.scan(prefix, after ?? '', this.limit(body.page?.limit), candidates);
    const page = { next_token: resumeAfter === undefined ? '' : tokenAt(request, resumeAfter), count: allowed.length };
    return {
      page: after === undefined && resumeAfter === undefined ? { ...page, total: allowed.length } : page,
      results: allowed.map((uri) => ({ type, id: uri.slice(prefix.length) })),
    };
  }

  /**
   * Decides the entities under `prefix` after `after` (those the store's narrowing leaves), in uri
   * order, until `limit` are allowed and another allowed one follows them, the entities end, or the
   * most candidates one request may decide have been.
   */
  private async scan(prefix: string, after: string, limit: number, candidates: Candidates): Promise<Scanned> {
    const { permits } = candidates;
    let { narrowedBy } = candidates;
    const allowed: string[] = [];
    let decided = 0;
    let position = after;
    for (;;) {
      const asked = Math.min(SLICE, this.limits.searchMaxCandidates - decided);
      // Out of candidates to decide: the next page goes on after the last one decided.
      if (asked === 0) return { allowed, resumeAfter: position };
      let slice: Entity[];
      try {
        slice = await this.registry.entitiesUnder(prefix, position, asked, narrowedBy);
      } catch (error) {
        if (!(error instanceof NarrowingTimedOut)) throw error;
        // The filter scans more than it finds: this request reads its ranges whole, as without one.
        narrowedBy = undefined;
        slice = await this.registry.entitiesUnder(prefix, position, asked);
      }
      for (const candidate of slice) {
        decided++;
        const permitted = permits(candidate);
        if (permitted instanceof Promise ? await permitted : permitted) {
          // A result past a full page: the next page starts with it.
          if (allowed.length === limit) return { allowed, resumeAfter: allowed.at(-1) ?? after };
          allowed.push(candidate.uri);
        }
        position = candidate.uri;
      }
      if (slice.length < asked) return { allowed, resumeAfter: undefined };
      await betweenSlices();
    }
  }

  /**
   * The registry as a search reads it: the candidate's attributes from the row the search read (no
   * second read, and no entry of the entity cache that checks rely on pushed out by a scan), any other
   * uri as checks read it.
   */
  private readFrom(candidate: Entity): RegisteredAttributes {
    const attributes = attributeMapOf(candidate);
    return (uri) => (uri === candidate.uri ? attributes : this.checks.registered(uri));
  }

  private limit(asked: number | undefined): number {
    return Math.min(asked ?? this.limits.maxPageSize, this.limits.maxPageSize);
  }

  /**
   * Whether the check is allowed (by `decided`, when given, in place of the policies); one that
   * cannot be decided as asked (a conflicting property) is not. Not a decision anyone asked for: no
   * metric, live figure or decision log line counts it.
   */
  private permits(input: CheckInput, candidate: Entity | undefined, decided?: (request: DecisionRequest) => boolean): boolean | Promise<boolean> {
    try {
      const allowed = this.checks.allows(input, decided, candidate && this.readFrom(candidate));
      return allowed instanceof Promise ? allowed.catch(allowsNothing) : allowed;
    } catch (error) {
      return allowsNothing(error);
    }
  }
}
