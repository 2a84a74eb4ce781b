import { CheckBatcher, revisionOf, type Decided } from './batcher.js';
import { ChangeFollower } from './change-follower.js';
import { DecisionCache, type CacheLimits } from './decision-cache.js';
import { Transport, type Call, type TransportOptions } from './transport.js';
import { within, type CallBounds } from './call-bounds.js';
import { CallTracing, type OpenTelemetryApi } from './tracing.js';
import {
  MIN_REVISION_HEADER,
  type AuthzenDecision,
  type AuthzenEvaluation,
  type AuthzenEvaluations,
  type AuthzenEvaluationsResponse,
  type CheckRequest,
  type Decision,
  type Entity,
  type EntityCreate,
  type EntityUpdate,
  type PlanRequest,
  type PlanResponse,
} from './wire.js';

export interface ClientOptions extends TransportOptions {
  /** Checks issued together go as one bulk (default on); `false` sends each alone. */
  batching?: false | { maxBatch?: number; windowMs?: number };
  /**
   * Keep decisions while the server's change feed says nothing changed them (default off: it
   * needs `GET /admin/changes`, which asks for an admin key of either role when authentication is on).
   */
  cache?: false | true | Partial<CacheLimits>;
  /** After a write through this client, its checks wait for the server to decide by it (`verdict-min-revision`; default on). */
  readYourWrites?: boolean;
  /** Told of what goes wrong in the background (the change feed lost). */
  onBackgroundError?: (error: unknown) => void;
  /**
   * Your app's `@opentelemetry/api` module: calls carry the caller's trace context, and each bulk of
   * batched checks is sent under a span linking its callers' spans (default: no tracing).
   */
  opentelemetry?: OpenTelemetryApi;
}

export interface CheckOptions extends CallBounds {
  /** Ask for the explanation (sent with the admin key; never cached). */
  explain?: boolean;
  /** The app's route that asks (the guards give theirs): named on the client's span, with `opentelemetry`. */
  route?: string;
}

const DEFAULT_LIMITS: CacheLimits = { maxEntries: 10_000, maxBytes: 8 << 20 };
const SERVER_BULK_LIMIT = 1000;

/**
 * A client of one Verdict server: checks batched into bulks, decisions cached exactly (optional),
 * reads of its own writes, on a keep-alive undici pool over TCP or a Unix socket.
 */
export class VerdictClient {
  private readonly transport: Transport;
  private readonly batcher: CheckBatcher | undefined;
  private readonly cache: DecisionCache | undefined;
  private readonly follower: ChangeFollower | undefined;
  private readonly readYourWrites: boolean;
  private readonly tracing: CallTracing;
  /** The highest revision a write through this client made: its checks are decided at it or later. */
  private writtenRevision: number | undefined;

  constructor(options: ClientOptions) {
    this.transport = new Transport(options);
    this.tracing = new CallTracing(options.opentelemetry);
    const { batching } = options;
    this.batcher =
      batching === false ? undefined : new CheckBatcher(this.transport, { maxBatch: batching?.maxBatch ?? SERVER_BULK_LIMIT, windowMs: batching?.windowMs ?? 0 }, this.tracing);
    if (options.cache !== undefined && options.cache !== false) {
      this.cache = new DecisionCache({ ...DEFAULT_LIMITS, ...(options.cache === true ? {} : options.cache) });
      this.follower = new ChangeFollower(this.transport, this.cache, options.onBackgroundError);
    }
    this.readYourWrites = options.readYourWrites ?? true;
  }

  /** The decision for one check: from the cache when it holds it, else batched with the checks issued beside it. */
  check(check: CheckRequest, options: CheckOptions = {}): Promise<Decision> {
    return within(() => this.checkNow(check, options.explain === true, options.route), options, 'check');
  }

  /** The decisions for several checks, in order: one or more bulks, or the cache. */
  checkMany(checks: readonly CheckRequest[], options: CheckOptions = {}): Promise<Decision[]> {
    return within(() => Promise.all(checks.map((check) => this.checkNow(check, options.explain === true, options.route))), options, 'checkMany');
  }

  /** What a principal may do with which resources: `POST /plan`. */
  async plan(request: PlanRequest, bounds: CallBounds = {}): Promise<PlanResponse> {
    return (await within(() => this.decisionCall({ method: 'POST', path: '/plan', body: request }), bounds, 'POST /plan')).body as PlanResponse;
  }

  /** An AuthZEN access evaluation: `POST /access/v1/evaluation`. */
  async evaluation(request: AuthzenEvaluation, options: CheckOptions = {}): Promise<AuthzenDecision> {
    const path = `/access/v1/evaluation${options.explain ? '?explain=true' : ''}`;
    return (await within(() => this.decisionCall({ method: 'POST', path, body: request, admin: options.explain }), options, `POST ${path}`)).body as AuthzenDecision;
  }

  /** AuthZEN access evaluations: `POST /access/v1/evaluations`. */
  async evaluations(request: AuthzenEvaluations, options: CheckOptions = {}): Promise<AuthzenEvaluationsResponse> {
    const path = `/access/v1/evaluations${options.explain ? '?explain=true' : ''}`;
    return (await within(() => this.decisionCall({ method: 'POST', path, body: request, admin: options.explain }), options, `POST ${path}`)).body as AuthzenEvaluationsResponse;
  }

  /** Registers an entity (admin key). Not retried: a second registration of the same uri would be refused. */
  async registerEntity(entity: EntityCreate): Promise<Entity> {
    const registered = (await this.write({ method: 'POST', path: '/admin/fetchers/registry/entities', body: entity })).body as Entity;
    this.cache?.dropUris([registered.uri]);
    return registered;
  }

  /** Replaces a registered entity's attributes (admin key). */
  async updateEntity(uri: string, entity: Omit<EntityUpdate, 'uri'>): Promise<Entity> {
    const updated = (await this.write({ method: 'PUT', path: `/admin/fetchers/registry/entities/${encodeURIComponent(uri)}`, body: { ...entity, uri } })).body as Entity;
    this.cache?.dropUris([uri]);
    return updated;
  }

  /** Deletes a registered entity (admin key). */
  async deleteEntity(uri: string): Promise<void> {
    await this.write({ method: 'DELETE', path: `/admin/fetchers/registry/entities/${encodeURIComponent(uri)}` });
    this.cache?.dropUris([uri]);
  }

  /** How late the last change reached the cache, in milliseconds (undefined without a cache or before a change). */
  get changeDelayMs(): number | undefined {
    return this.follower?.lastDelayMs;
  }

  /**
   * Whether the cache may serve decisions now: it follows the change feed, at a revision whose
   * decisions do not read the time, and no older than this client's own last write.
   */
  get cacheServing(): boolean {
    const revision = this.follower?.revision;
    return this.follower !== undefined && this.follower.keeps(revision) && (this.writtenRevision === undefined || revision! >= this.writtenRevision);
  }

  /** The change feed's lines applied to the cache so far (0 without a cache). */
  get changesApplied(): number {
    return this.follower?.changesApplied ?? 0;
  }

  /** The decision for one check, from the cache or the server, with no bound of the caller's. */
  private async checkNow(check: CheckRequest, explain: boolean, route: string | undefined): Promise<Decision> {
    const cacheable = !explain && this.cache !== undefined && !namesToken(check);
    const key = cacheable ? JSON.stringify(check) : '';
    if (cacheable && this.cacheServing) {
      const cached = this.cache!.get(key);
      if (cached !== undefined) return cached;
    }
    const epoch = this.cache?.epoch ?? 0;
    const { decision, revision } = await this.decide(check, explain, route);
    if (cacheable && this.follower!.keeps(revision)) this.cache!.set(key, decision, urisOf(check), epoch);
    return decision;
  }

  async close(): Promise<void> {
    this.follower?.close();
    await this.transport.close();
  }

  private decide(check: CheckRequest, explain: boolean, route: string | undefined): Promise<Decided> {
    const minRevision = this.readYourWrites ? this.writtenRevision : undefined;
    if (this.batcher !== undefined) return this.batcher.decide(check, explain, minRevision, route);
    return this.decisionCall({ method: 'POST', path: explain ? '/check?explain=true' : '/check', body: check, admin: explain }).then(
      (answer) => ({ decision: answer.body as Decision, revision: revisionOf(answer.headers) }),
    );
  }

  /** A call that decides (safe to send again), at this client's own last write or later. */
  private decisionCall(call: Omit<Call, 'retryable' | 'headers'>) {
    return this.transport.send({ ...call, retryable: true, headers: { ...this.tracing.activeContextHeaders(), ...this.minRevisionHeader() } });
  }

  /** An admin write, never retried, whose revision this client's next checks wait for (an entity write also drops what the cache holds of it at once). */
  private async write(call: Omit<Call, 'retryable' | 'admin'>) {
    const answer = await this.transport.send({ ...call, retryable: false, admin: true, headers: { ...this.tracing.activeContextHeaders(), ...call.headers } });
    const revision = revisionOf(answer.headers);
    if (revision !== undefined && (this.writtenRevision === undefined || revision > this.writtenRevision)) this.writtenRevision = revision;
    return answer;
  }

  private minRevisionHeader(): Record<string, string> {
    return this.readYourWrites && this.writtenRevision !== undefined ? { [MIN_REVISION_HEADER]: String(this.writtenRevision) } : {};
  }
}

/** Whether the check's principal is a bearer token: its decision is never kept, since the token expires (and its key set may rotate) with no change on the feed. */
const namesToken = (check: CheckRequest) => typeof check.principal?.token === 'string' && check.principal.token !== '';

/** The registered entities a check reads: those it names by uri, in either form. */
function urisOf(check: CheckRequest): string[] {
  const uris = [check.principal?.uri, check.resource?.uri, check.principal_uri, check.resource_uri];
  return uris.filter((uri): uri is string => typeof uri === 'string');
}
