import type { PlanResponse } from '../schemas/plan.js';
import {
  AnswerBudget,
  jsonLength,
  mapComparisons,
  mongoFilter,
  plan,
  PlanTooLarge,
  PlanUnstatable,
  SELECTS_NOTHING,
  spellOperator,
  type ConditionTree,
  type DecisionRequest,
  type MongoFilterOptions,
  type OperatorStyle,
  type Plan,
  type Snapshot,
} from '../engine/index.js';
import { ClientError } from '../errors.js';
import { planTooLarge, plansTooLarge } from './answer-limits.js';
import { PLAN_ANSWER_GROWTH, type Config } from '../config/config.js';

/** How long a plan's condition may be (its filter: twice as long), and the plans of one request together; how answers spell operators. */
export type PlanSettings = Pick<Config, 'maxPlanSize' | 'maxAnswerSize' | 'operatorStyle'>;

/**
 * One plan to make, its principal resolved (on the front, which holds the registry): the request
 * and where the resource's fields live; or, in a bulk, the attribute conflict that denies it.
 */
export type PlanWork = { request: DecisionRequest; layout: MongoFilterOptions } | { conflict: string };

/** The condition with its operators spelled in `style`, as policy answers spell them. */
function spelled(condition: ConditionTree, style: OperatorStyle): ConditionTree {
  if (style === 'spec') return condition;
  return mapComparisons(condition, (comparison) => ({ ...comparison, operator: spellOperator(comparison.operator, style) }));
}

function planned(snapshot: Snapshot, { request, layout }: { request: DecisionRequest; layout: MongoFilterOptions }, settings: PlanSettings): PlanResponse {
  const made: Plan = plan(snapshot, request, settings.maxPlanSize);
  // Spelled before the filter is written, so that a reason naming a condition spells it as the answer does.
  const condition = spelled(made.condition, settings.operatorStyle);
  // A filter states each comparison with more words than the condition (type tests, $exists): it has twice the room.
  const filter = mongoFilter(condition, layout, (PLAN_ANSWER_GROWTH - 1) * settings.maxPlanSize);
  // Fields in the order the front's serializer writes them (required ones first): a worker's JSON must be the same bytes.
  const exact = made.exact === false ? { exact: false as const } : {};
  if ('filter' in filter) return { kind: made.kind, condition, reason: made.reason, mongodb: filter.filter, ...exact };
  return { kind: made.kind, condition, reason: `${made.reason}; no MongoDB filter: ${filter.unsupported}`, ...exact };
}

/** The JSON length of a plan's answer, but for its reason. */
const answerLength = (answer: PlanResponse) => jsonLength(answer.condition as ConditionTree) + (answer.mongodb === undefined ? 0 : JSON.stringify(answer.mongodb).length);

/**
 * The answers to `work` against `snapshot`, in order: each plan held to the plan size, and all of
 * them together to the answer size. Throws the ClientError (400) of a plan too long to state even
 * coarsely (in a bulk, naming its item) or of plans too long together.
 */
export function planAnswers(snapshot: Snapshot, work: readonly PlanWork[], settings: PlanSettings, bulk: boolean): PlanResponse[] {
  const budget = new AnswerBudget(settings.maxAnswerSize);
  return work.map((item, index) => {
    if ('conflict' in item) return { kind: 'always_denied', condition: false, reason: item.conflict, mongodb: SELECTS_NOTHING };
    let answer: PlanResponse;
    try {
      answer = planned(snapshot, item, settings);
    } catch (error) {
      if (!(error instanceof PlanTooLarge) && !(error instanceof PlanUnstatable)) throw error;
      const refused = error instanceof PlanTooLarge ? planTooLarge(error.maxLength) : new ClientError(400, `The plan cannot be stated: ${error.message}`);
      throw bulk ? new ClientError(400, `Item ${index}: ${refused.detail}`) : refused;
    }
    // One plan always fits (see loadConfig); plans together may not.
    if (!budget.spend(answerLength(answer))) throw plansTooLarge(budget.maxLength, index);
    return answer;
  });
}
