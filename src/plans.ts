import type { PlanRequest, PlanResponse } from './schemas/plan.js';
import type { CheckRequest } from './schemas/check.js';
import type { ValidationIssue } from './schemas/errors.js';
import {
  AnswerBudget,
  DEFAULT_MONGO_FILTER_OPTIONS,
  jsonLength,
  mapComparisons,
  mongoFilter,
  mongoOptionIssue,
  plan,
  PlanTooLarge,
  SELECTS_NOTHING,
  spellOperator,
  type ConditionTree,
  type DecisionRequest,
  type MongoFilterOptions,
  type OperatorStyle,
  type Plan,
} from './engine/index.js';
import { DEFAULT_ACTION, entityInput, isIssue, type CheckInput } from './registry/check-request.js';
import { DuplicateAttribute, toAttributeMap } from './registry/attributes.js';
import { AttributeConflict, resolveCheck, type RegisteredAttributes } from './registry/resolve.js';
import type { PolicySnapshots } from './snapshot/policy-snapshots.js';
import { ClientError, RequestValidationError } from './errors.js';
import { answerEach } from './each-settled.js';
import { readBulkItems } from './registry/bulk-request.js';
import { planTooLarge, plansTooLarge } from './answer-limits.js';
import { PLAN_ANSWER_GROWTH, type Config } from './config.js';

/** How long a plan's condition may be (its filter: twice as long), and the plans of one request together. */
export type PlanLimits = Pick<Config, 'maxPlanSize' | 'maxAnswerSize'>;

/** An item of a bulk, and the budget of the bulk's answer. */
interface BulkItem {
  budget: AnswerBudget;
  item: number;
}

/** A plan request read: the check it resembles (the resource holding what is known of it) and the MongoDB layout. */
export interface PlanInput {
  check: CheckInput;
  layout: MongoFilterOptions;
}

type Location = (string | number)[];

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
  const nested = request.resource !== undefined && request.resource !== null;
  const known = toAttributeMap(nested ? request.resource!.attributes : request.resource_attributes);
  const layout = layoutOf(request, at);
  const issues = [
    ...(isIssue(principal) ? [principal] : []),
    ...(known instanceof DuplicateAttribute ? [known.issueAt(nested ? [...at, 'resource', 'attributes'] : [...at, 'resource_attributes'])] : []),
    ...(Array.isArray(layout) ? layout : []),
  ];
  if (issues.length > 0) return issues;
  return {
    check: { principal: principal as CheckInput['principal'], resource: { uri: undefined, attributes: known as Map<string, unknown> }, action: request.action ?? DEFAULT_ACTION },
    layout: layout as MongoFilterOptions,
  };
}

/** The answer for a principal whose attributes conflict with the registry: nothing is allowed. */
function conflictAsDenial(error: unknown): PlanResponse {
  if (!(error instanceof AttributeConflict)) throw error;
  return { kind: 'always_denied', condition: false, mongodb: SELECTS_NOTHING, reason: error.message };
}

/** The condition with its operators spelled in `style`, as policy answers spell them. */
function spelled(condition: ConditionTree, style: OperatorStyle): ConditionTree {
  if (style === 'spec') return condition;
  return mapComparisons(condition, (comparison) => ({ ...comparison, operator: spellOperator(comparison.operator, style) }));
}

/**
 * Answers "which resources may this principal act on": resolves the principal exactly as a check
 * does (registry and supplied attributes merged, conflicts refused), plans against the current
 * snapshot, and renders the plan's condition as a MongoDB filter when one says exactly the same.
 */
export class PlanService {
  constructor(
    private readonly snapshots: PolicySnapshots,
    private readonly registered: RegisteredAttributes,
    private readonly operatorStyle: OperatorStyle,
    private readonly limits: PlanLimits,
  ) {}

  /**
   * Throws RequestValidationError (422) for an unusable request, and ClientError (400) for an
   * attribute conflict or a plan too long to state even coarsely.
   */
  plan(request: PlanRequest): PlanResponse | Promise<PlanResponse> {
    const input = readPlanRequest(request, ['body']);
    if (Array.isArray(input)) throw new RequestValidationError(input);
    const asClientError = (error: unknown): never => {
      if (error instanceof AttributeConflict) throw new ClientError(400, error.message);
      throw error;
    };
    try {
      // A plan's condition and its filter fit in the answer budget together (see loadConfig): one plan needs no other.
      const answer = this.answer(input);
      return answer instanceof Promise ? answer.catch(asClientError) : answer;
    } catch (error) {
      return asClientError(error);
    }
  }

  /**
   * Plans every request of a bulk, all read first as /check/bulk reads its items (see readBulkItems);
   * a conflict only denies its own item. An item too long to plan, or plans longer together than
   * the answer budget, fail the call (400).
   */
  planMany(requests: PlanRequest[]): PlanResponse[] | Promise<PlanResponse[]> {
    const inputs = readBulkItems(requests, readPlanRequest);
    const budget = new AnswerBudget(this.limits.maxAnswerSize);
    return answerEach(inputs, (input, item) => this.answer(input, { budget, item }), conflictAsDenial);
  }

  /** Throws (or rejects with) AttributeConflict, or the ClientError of a plan, or plans, too long. */
  private answer(input: PlanInput, bulk?: BulkItem): PlanResponse | Promise<PlanResponse> {
    const request = resolveCheck(input.check, this.registered);
    if (request instanceof Promise) return request.then((resolved) => this.planNow(resolved, input.layout, bulk));
    return this.planNow(request, input.layout, bulk);
  }

  private planNow(request: DecisionRequest, layout: MongoFilterOptions, bulk: BulkItem | undefined): PlanResponse {
    const { maxPlanSize } = this.limits;
    let planned: Plan;
    try {
      planned = plan(this.snapshots.current, request, maxPlanSize);
    } catch (error) {
      if (!(error instanceof PlanTooLarge)) throw error;
      const refused = planTooLarge(error.maxLength);
      throw bulk === undefined ? refused : new ClientError(400, `Item ${bulk.item}: ${refused.detail}`);
    }
    // Spelled before the filter is written, so that a reason naming a condition spells it as the answer does.
    const condition = spelled(planned.condition, this.operatorStyle);
    // A filter states each comparison with more words than the condition (type tests, $exists): it has twice the room.
    const filter = mongoFilter(condition, layout, (PLAN_ANSWER_GROWTH - 1) * maxPlanSize);
    const length = jsonLength(condition) + ('filter' in filter ? JSON.stringify(filter.filter).length : 0);
    if (bulk !== undefined && !bulk.budget.spend(length)) throw plansTooLarge(bulk.budget.maxLength, bulk.item);
    const exact = planned.exact === false ? { exact: false as const } : {};
    if ('filter' in filter) return { kind: planned.kind, condition, mongodb: filter.filter, reason: planned.reason, ...exact };
    return { kind: planned.kind, condition, reason: `${planned.reason}; no MongoDB filter: ${filter.unsupported}`, ...exact };
  }
}
