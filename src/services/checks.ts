import type { CheckRequest } from '../schemas/check.js';
import { AnswerBudget, ExplanationTooLarge, type Decision, type DecisionRequest } from '../engine/index.js';
import { instantOf } from '../engine/time.js';
import { decideResolved, decisionOf } from '../decide/kernel.js';
import { readCheckRequest, type CheckInput, type SideWording } from '../requests/check-request.js';
import { resolveCheck, type RegisteredAttributes, type ResolveOptions } from '../registry/resolve.js';
import { deniedItem, refusedCall } from '../decide/undecidable-answers.js';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import { RequestValidationError, Undecidable } from '../errors.js';
import { answerEach } from '../decide/answer-each.js';
import { explanationsTooLarge } from '../decide/answer-limits.js';
import { SchemaViolation } from '../attribute-schemas/enforcement.js';
import { decisionOrigin, type DecisionOrigin, type RequestOrigin } from '../decision-log/line.js';
import type { EnforcedSchemas } from '../attribute-schemas/schemas-in-force.js';
import type { ValidationIssue } from '../schemas/errors.js';

/** Stands for an item that had a conflict until the call is refused. */
const CONFLICTED: Decision = { allowed: false, reason: '' };

export interface CheckObservers {
  /**
   * Told of every decision made on this thread: what was asked, what it was decided on, at which
   * revision, since when (performance.now() as it began; 0 unless `timed`), and what it broke of the
   * attribute schemas (warn; none: empty or undefined).
   */
  decision?: (
    input: CheckInput,
    request: DecisionRequest,
    decision: Decision,
    revision: number,
    startedAt: number,
    violations: readonly string[] | undefined,
    origin: DecisionOrigin | undefined,
  ) => void;
  /** Told of every check refused for breaking the attribute schemas under `reject`, as `decision` is of a decision. */
  refused?: (input: CheckInput, request: DecisionRequest, refusal: SchemaViolation, revision: number, startedAt: number, origin: DecisionOrigin | undefined) => void;
  /**
   * Whether `decision` reads its `startedAt` and `origin`: otherwise the clock is not read for every
   * check (some 85 ns each), and no origin is made.
   */
  readonly timed?: boolean;
  /** Told of the size of every bulk decided on this thread. */
  bulk?: (size: number) => void;
}

/**
 * Answers checks: reads the request, resolves attributes, evaluates against the current snapshot.
 * Stays synchronous whenever the registry answers from its cache, so a check costs no promise.
 */
export class CheckService {
  constructor(
    private readonly snapshots: PolicySnapshots,
    /** The registry as checks read it: through the entity cache. */
    readonly registered: RegisteredAttributes,
    /** What the explanations of one call may hold together, in characters of JSON. */
    private readonly maxAnswerSize: number,
    private readonly observers: CheckObservers = {},
    /** The attribute schemas checks are held to, when there are any to enforce. */
    private readonly schemas?: EnforcedSchemas,
    /** How checks are resolved beyond the registry: tokens, and conflicts with it. */
    private readonly resolving: ResolveOptions = {},
    /** How a side a check cannot use is told. */
    private readonly sideWording: SideWording = 'eunomia',
  ) {}

  /**
   * Throws RequestValidationError (422) for an unusable request and ClientError (400) for an
   * attribute conflict or an explanation longer than the answer budget. With `explain`, the
   * decision carries how it came about. `origin`: the request it answers, for the decision log.
   */
  check(request: CheckRequest, explain = false, origin?: RequestOrigin): Decision | Promise<Decision> {
    const input = readCheckRequest(request, ['body'], this.sideWording);
    if (Array.isArray(input)) throw new RequestValidationError(input);
    const decide = this.decider(1, explain, origin);
    try {
      const decision = decide(input);
      return decision instanceof Promise ? decision.catch(refusedCall) : decision;
    } catch (error) {
      return refusedCall(error);
    }
  }

  /**
   * Decides `request` as if at `time` (an RFC 3339 date-time: the decision's time, `context.time`),
   * explained, against the current snapshot and the attribute schemas in force, told to no observer:
   * what an operator asks to try a policy at another time. It decides nothing that happens.
   */
  decideAt(request: CheckRequest, time: string): Decision | Promise<Decision> {
    const input = readCheckRequest(request, ['body', 'check'], this.sideWording);
    const at = instantOf(time);
    const issues = [...(Array.isArray(input) ? input : []), ...(at === undefined ? [{ loc: ['body', 'time'], msg: `'${time}' is not an RFC 3339 date-time with its offset`, type: 'value_error' }] : [])];
    if (issues.length > 0 || Array.isArray(input)) throw new RequestValidationError(issues);
    const decide = (resolved: DecisionRequest) => {
      resolved.time = new Date(at!).toISOString();
      return decideResolved(this.snapshots.current, resolved, this.schemas?.enforced?.enforce(resolved), new AnswerBudget(this.maxAnswerSize)).answer;
    };
    const asClientError = (error: unknown): never => {
      throw error instanceof ExplanationTooLarge ? explanationsTooLarge(error.maxLength, 1) : refusedCall(error);
    };
    try {
      const resolved = resolveCheck(input, this.registered, this.resolving);
      return resolved instanceof Promise ? resolved.then(decide).catch(asClientError) : decide(resolved);
    } catch (error) {
      return asClientError(error);
    }
  }

  /**
   * Decides checks already read (see readBulkBody); a conflict only denies its own item (with no
   * explanation), or, when `refuseConflicts`, refuses the call (422) naming every item that had one.
   * Explanations longer together than the answer budget fail the call (400).
   */
  checkMany(inputs: CheckInput[], explain = false, origin?: RequestOrigin, refuseConflicts = false): Decision[] | Promise<Decision[]> {
    this.observers.bulk?.(inputs.length);
    const decide = this.decider(inputs.length, explain, origin);
    if (!refuseConflicts) return answerEach(inputs, decide, deniedItem);
    const conflicts: ValidationIssue[] = [];
    const noted = (index: number) => (error: unknown): Decision => {
      if (!(error instanceof Undecidable)) throw error;
      conflicts.push({ loc: ['body', index], msg: error.message, type: 'attribute_conflict' });
      return CONFLICTED;
    };
    const refusing = (decisions: Decision[]) => {
      if (conflicts.length > 0) throw new RequestValidationError(conflicts.sort((one, other) => (one.loc[1] as number) - (other.loc[1] as number)));
      return decisions;
    };
    const answered = answerEach(inputs, (input, index) => {
      try {
        const decided = decide(input);
        return decided instanceof Promise ? decided.catch(noted(index)) : decided;
      } catch (error) {
        return noted(index)(error);
      }
    }, (error) => {
      throw error;
    });
    return answered instanceof Promise ? answered.then(refusing) : refusing(answered);
  }

  /**
   * What decides the `checks` checks of one call, already read, sharing one explanation budget. It
   * throws (or rejects with) Undecidable for a check that cannot be decided as asked, and the
   * 400 of explanationsTooLarge once the call's explanations outgrow the answer budget. The checks
   * decided are numbered in the order they are given, in the ids of their decisions (see DecisionOrigin).
   */
  decider(checks: number, explain: boolean, origin?: RequestOrigin): (input: CheckInput) => Decision | Promise<Decision> {
    const explanations = this.explanations(explain);
    let decided = 0;
    const originOfNext = origin === undefined || (this.observers.timed !== true && origin.trace === undefined) ? () => undefined : () => decisionOrigin(origin, decided++);
    if (explanations === undefined) return (input) => this.decide(input, undefined, originOfNext());
    const asClientError = (error: unknown): never => {
      throw error instanceof ExplanationTooLarge ? explanationsTooLarge(error.maxLength, checks) : error;
    };
    return (input) => {
      try {
        const decision = this.decide(input, explanations, originOfNext());
        return decision instanceof Promise ? decision.catch(asClientError) : decision;
      } catch (error) {
        return asClientError(error);
      }
    };
  }

  /**
   * One check of a door that answers with the principal too (external authorization names it to the
   * app): decided as any check and told to every observer, with the uri the principal was resolved
   * to (one its credential gave it, say). Rejects with Undecidable for a check that cannot be decided as asked.
   */
  async decideNamingPrincipal(input: CheckInput, origin?: RequestOrigin): Promise<{ decision: Decision; principalUri: string | undefined }> {
    const startedAt = this.observers.timed === true ? performance.now() : 0;
    const request = await resolveCheck(input, this.registered, this.resolving, origin?.trace);
    const decided = origin === undefined || (this.observers.timed !== true && origin.trace === undefined) ? undefined : decisionOrigin(origin, 0);
    return { decision: this.evaluateNow(input, request, startedAt, undefined, decided), principalUri: request.principal.uri };
  }

  /**
   * Whether a check already read is allowed, told to no observer: a search decides every candidate,
   * and counting or logging each would flood the metrics, the live view's recent denials and the
   * decision log (whose writer drops lines past its queue) with decisions nobody asked for. Throws
   * (or rejects with) Undecidable for a check that cannot be decided as asked. `decided`, when
   * given, decides the resolved check in place of the policies (an exact plan's condition, which says
   * what they would). `registered`, when given, reads the registry in place of the entity cache (a
   * search, which has read its candidates' rows already).
   */
  allows(input: CheckInput, decided?: (request: DecisionRequest) => boolean, registered: RegisteredAttributes = this.registered): boolean | Promise<boolean> {
    const allowed = (request: DecisionRequest) => this.allowsResolved(request, decided);
    const request = resolveCheck(input, registered, this.resolving);
    return request instanceof Promise ? request.then(allowed) : allowed(request);
  }

  /** A candidate that breaks the schemas under `reject` is not allowed, as a check would be refused. */
  private allowsResolved(request: DecisionRequest, decided?: (request: DecisionRequest) => boolean): boolean {
    const schemas = this.schemas?.enforced;
    if (schemas?.enforcement === 'reject' && schemas.breaks(request)) return false;
    return decided ? decided(request) : decisionOf(this.snapshots.current, request).allowed;
  }

  /** The budget of one call's explanations, or undefined when none is asked for. */
  private explanations(explain: boolean): AnswerBudget | undefined {
    return explain ? new AnswerBudget(this.maxAnswerSize) : undefined;
  }

  /** Throws (or rejects with) Undecidable or ExplanationTooLarge. */
  private decide(input: CheckInput, explanations: AnswerBudget | undefined, origin: DecisionOrigin | undefined): Decision | Promise<Decision> {
    const startedAt = this.observers.timed === true ? performance.now() : 0;
    const request = resolveCheck(input, this.registered, this.resolving, origin?.trace);
    if (request instanceof Promise) return request.then((resolved) => this.evaluateNow(input, resolved, startedAt, explanations, origin));
    return this.evaluateNow(input, request, startedAt, explanations, origin);
  }

  /** Evaluates against the snapshot current at this moment, which includes every acknowledged policy write. */
  private evaluateNow(input: CheckInput, request: DecisionRequest, startedAt: number, explanations: AnswerBudget | undefined, origin: DecisionOrigin | undefined): Decision {
    const violations = this.enforceSchemas(input, request, startedAt, origin);
    const snapshot = this.snapshots.current;
    const { decision, answer } = decideResolved(snapshot, request, violations, explanations);
    this.observers.decision?.(input, request, decision, snapshot.revision, startedAt, violations, origin);
    return answer;
  }

  /** What the check breaks of the schemas (warn); a refusal (reject) is told to `refused` before it is thrown. */
  private enforceSchemas(input: CheckInput, request: DecisionRequest, startedAt: number, origin: DecisionOrigin | undefined): readonly string[] | undefined {
    try {
      return this.schemas?.enforced?.enforce(request);
    } catch (error) {
      if (error instanceof SchemaViolation) this.observers.refused?.(input, request, error, this.snapshots.current.revision, startedAt, origin);
      throw error;
    }
  }
}
