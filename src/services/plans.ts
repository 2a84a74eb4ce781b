import type { PlanRequest, PlanResponse } from '../schemas/plan.js';
import type { CheckRequest } from '../schemas/check.js';
import type { Location, ValidationIssue } from '../schemas/errors.js';
import { DEFAULT_MONGO_FILTER_OPTIONS, mongoOptionIssue, type ConditionTree, type DecisionRequest, type MongoFilterOptions } from '../engine/index.js';
import { actionInput, entityInput, isIssue, type ActionInput, type CheckInput } from '../requests/check-request.js';
import { DuplicateAttribute, toAttributeMap } from '../requests/attributes.js';
import { resolveCheck, type RegisteredAttributes, type ResolveOptions } from '../registry/resolve.js';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import { allowsNothing, deniedItem, refusedCall } from '../decide/undecidable-answers.js';
import { ClientError, RequestValidationError } from '../errors.js';
import { answerEach } from '../decide/answer-each.js';
import { readBulkItems } from '../requests/bulk-request.js';
import { planAnswers, type PlanSettings, type PlanWork } from '../decide/plan-answers.js';
import type { BulkPool } from '../pool/bulk-pool.js';
import type { EnforcedSchemas } from '../attribute-schemas/schemas-in-force.js';

/** A plan request read: the check it resembles (the resource holding what is known of it) and the MongoDB layout. */
export interface PlanInput {
  check: CheckInput;
  layout: MongoFilterOptions;
}


function layoutOf(request: PlanRequest, at: Location): MongoFilterOptions | ValidationIssue[] {
  const layout = {
    attributesPrefix: request.mongodb?.attributes_prefix ?? DEFAULT_MONGO_FILTER_OPTIONS.attributesPrefix,
    uriField: request.mongodb?.uri_field ?? DEFAULT_MONGO_FILTER_OPTIONS.uriField,
  };
  const issues: ValidationIssue[] = [];
  const prefixIssue = mongoOptionIssue('attributesPrefix', layout.attributesPrefix);
  if (prefixIssue !== undefined) issues.push({ loc: [...at, 'mongodb', 'attributes_prefix'], msg: prefixIssue, type: 'value_error' });
  const uriIssue = mongoOptionIssue('uriField', layout.uriField);
  if (uriIssue !== undefined) issues.push({ loc: [...at, 'mongodb', 'uri_field'], msg: uriIssue, type: 'value_error' });
  return issues.length > 0 ? issues : layout;
}

/** Reads a schema-valid plan request, or the issues that make it unusable. `at` locates it in the body. */
export function readPlanRequest(request: PlanRequest, at: Location): PlanInput | ValidationIssue[] {
  const principal = entityInput(request as CheckRequest, 'principal', at);
  const action = actionInput(request, at);
  const nested = request.resource !== undefined && request.resource !== null;
  const known = toAttributeMap(nested ? request.resource!.attributes : request.resource_attributes);
  const layout = layoutOf(request, at);
  const issues = [
    ...(isIssue(principal) ? [principal] : []),
    ...('loc' in action ? [action] : []),
    ...(known instanceof DuplicateAttribute ? [known.issueAt(nested ? [...at, 'resource', 'attributes'] : [...at, 'resource_attributes'])] : []),
    ...(Array.isArray(layout) ? layout : []),
  ];
  if (issues.length > 0) return issues;
  return {
    check: { principal: principal as CheckInput['principal'], resource: { uri: undefined, attributes: known as Map<string, unknown> }, ...(action as ActionInput) },
    layout: layout as MongoFilterOptions,
  };
}

/** Answers made on the front, or their JSON as a worker wrote it. */
export type Planned<Answer> = { answer: Answer } | { json: string };

/**
 * Answers "which resources may this principal act on": resolves the principal exactly as a check
 * does (registry and supplied attributes merged, conflicts refused), plans against the current
 * snapshot, and renders the plan's condition as a MongoDB filter when one says exactly the same.
 * Plans are made in the worker pool when there is one: a large plan costs tens of milliseconds,
 * which the front thread owes to the checks it answers; the front resolves principals (it holds the
 * registry's cache) and makes them itself only when no worker can.
 */
export class PlanService {
  constructor(
    private readonly snapshots: PolicySnapshots,
    private readonly registered: RegisteredAttributes,
    private readonly settings: PlanSettings,
    private readonly pool?: BulkPool,
    /** The attribute schemas the requests are held to, as checks are (their resource is known only in part). */
    private readonly schemas?: EnforcedSchemas,
    /** How checks are resolved beyond the registry: tokens, and conflicts with it. */
    private readonly resolving: ResolveOptions = {},
  ) {}

  /**
   * Throws RequestValidationError (422) for an unusable request, and ClientError (400) for an
   * attribute conflict, attributes that break the schemas (under `reject`) or a plan too long to
   * state even coarsely.
   */
  async plan(request: PlanRequest): Promise<Planned<PlanResponse>> {
    const input = readPlanRequest(request, ['body']);
    if (Array.isArray(input)) throw new RequestValidationError(input);
    let resolved: DecisionRequest;
    try {
      resolved = this.heldToSchemas(await resolveCheck(input.check, this.registered, this.resolving));
    } catch (error) {
      return refusedCall(error);
    }
    const planned = await this.made([{ request: resolved, layout: input.layout }], true);
    return 'json' in planned ? planned : { answer: planned.answer[0]! };
  }

  /**
   * Plans every request of a bulk, all read first as /check/bulk reads its items (see readBulkItems);
   * a conflict, or attributes that break the schemas under `reject`, only deny their own item. An
   * item too long to plan, or plans longer together than the answer budget, fail the call (400).
   */
  async planMany(requests: PlanRequest[]): Promise<Planned<PlanResponse[]>> {
    const inputs = readBulkItems(requests, readPlanRequest);
    const work = await answerEach(
      inputs,
      (input): PlanWork | Promise<PlanWork> => {
        const planned = (request: DecisionRequest) => ({ request: this.heldToSchemas(request), layout: input.layout });
        const resolved = resolveCheck(input.check, this.registered, this.resolving);
        return resolved instanceof Promise ? resolved.then(planned) : planned(resolved);
      },
      conflictAsWork,
    );
    return this.made(work, false);
  }

  /**
   * The request, once held to the schemas as a check is, but for what its resource leaves out (it
   * is the unknown side): counted when it breaks them; SchemaViolation under `reject`.
   */
  private heldToSchemas(request: DecisionRequest): DecisionRequest {
    this.schemas?.enforced?.enforce(request, 'partial');
    return request;
  }

  /**
   * The condition that holds for exactly the resources the check's principal may perform its action
   * on, in its context (the resource open but for the attributes it holds), operators in their
   * canonical spelling: what a search filters candidates by. `false` when the principal's supplied
   * attributes conflict with the registry (no such check can be decided as asked); undefined when no
   * exact plan can be made (too large to state exactly, or a relation a plan cannot state), so that
   * each candidate must be checked.
   */
  async exactCondition(input: CheckInput): Promise<ConditionTree | undefined> {
    let request: DecisionRequest;
    try {
      request = await resolveCheck(input, this.registered, this.resolving);
    } catch (error) {
      return allowsNothing(error);
    }
    let planned: Planned<PlanResponse[]>;
    try {
      planned = await this.made([{ request, layout: DEFAULT_MONGO_FILTER_OPTIONS }], true, { ...this.settings, operatorStyle: 'spec' });
    } catch (error) {
      // A plan too large to state even coarsely, or one that cannot be stated.
      if (error instanceof ClientError) return undefined;
      throw error;
    }
    const answer = 'json' in planned ? (JSON.parse(planned.json) as PlanResponse) : planned.answer[0]!;
    return answer.exact === false ? undefined : (answer.condition as ConditionTree);
  }

  /** The answers to `work`, made in a worker when one can. */
  private async made(work: PlanWork[], single: boolean, settings = this.settings): Promise<Planned<PlanResponse[]>> {
    const json = await this.pool?.plans(work, settings, single);
    if (json !== undefined) return { json };
    return { answer: planAnswers(this.snapshots.current, work, settings, !single) };
  }
}

/** A bulk item that cannot be planned as asked: it is denied everything, its reason why. */
const conflictAsWork = (error: unknown): PlanWork => ({ conflict: deniedItem(error).reason });
