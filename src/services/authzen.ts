import type { Decision, ExplainedDecision } from '../engine/index.js';
import type { AuthzenDecision, AuthzenEvaluation, AuthzenEvaluations, EvaluationsSemantic } from '../schemas/authzen.js';
import { evaluationInput, readEvaluations, type UndecidableItem } from '../requests/authzen-request.js';
import type { CheckInput } from '../requests/check-request.js';
import type { CheckService } from './checks.js';
import { authzenItemError, refusedCall } from '../decide/undecidable-answers.js';
import { answerEach } from '../decide/answer-each.js';
import type { RequestOrigin } from '../decision-log/line.js';

type Answer = AuthzenDecision | Promise<AuthzenDecision>;

/** What an evaluations request is answered with: `evaluations` in request order, or one decision when it had none. */
export type EvaluationsAnswer = { evaluations: AuthzenDecision[] } | AuthzenDecision;

/** The JSON of every decision answered without reasons, written once with it: answers of these are joined from the texts, not serialized. */
const fixedJson = new WeakMap<AuthzenDecision, string>();

/** `decision` frozen, its context too, with its JSON: the key order the response schema serializes, as JSON.stringify writes it. */
function fixed(decision: AuthzenDecision): AuthzenDecision {
  if (decision.context !== undefined) Object.freeze(decision.context);
  const frozen = Object.freeze(decision);
  fixedJson.set(frozen, JSON.stringify(frozen));
  return frozen;
}

const PERMIT = fixed({ decision: true });
const DENY = fixed({ decision: false });

/** The context AuthZEN's example gives the evaluation at which deny_on_first_deny stopped. */
const STOPPED_AT_DENIAL = fixed({ decision: false, context: { code: '200', reason: 'deny_on_first_deny' } });

/**
 * An answer as JSON, joined from the texts of its decisions, when every one is answered without
 * reasons and was decided (the answers of the hot path); undefined otherwise, for the response
 * schema to serialize. The bytes are the schema's either way.
 */
export function fixedAnswerJson(answer: EvaluationsAnswer): string | undefined {
  if (!('evaluations' in answer)) return fixedJson.get(answer);
  let json = '{"evaluations":[';
  for (let index = 0; index < answer.evaluations.length; index++) {
    const text = fixedJson.get(answer.evaluations[index]!);
    if (text === undefined) return undefined;
    json += (index === 0 ? '' : ',') + text;
  }
  return json + ']}';
}

/** A decision as AuthZEN answers it: exactly `{decision}`, or with Verdict's reason and explanation in `context` when asked. */
function authzenDecision(decision: Decision, explain: boolean): AuthzenDecision {
  if (!explain) return decision.allowed ? PERMIT : DENY;
  return { decision: decision.allowed, context: { reason: decision.reason, explanation: (decision as ExplainedDecision).explain } };
}

/** An evaluation that cannot be decided as asked denies, saying why in its context (the others are decided). */
const undecided = (error: unknown): AuthzenDecision => ({ decision: false, context: { error: authzenItemError(error) } });

const undecidable = (message: string): AuthzenDecision => ({ decision: false, context: { error: { status: 400, message } } });

const then = <T, U>(value: T | Promise<T>, next: (value: T) => U): U | Promise<U> => (value instanceof Promise ? value.then(next) : next(value));

/**
 * The AuthZEN Authorization API's decisions, mapped onto the check service: an AuthZEN request is read
 * into the check it stands for (src/requests/authzen-request.ts) and decided as /check decides it, so
 * metrics, the live view, recent denials and the decision log see it as a check.
 */
export class AuthzenService {
  constructor(
    private readonly checks: CheckService,
    /** The most evaluations one call may hold: as many as a bulk check. */
    private readonly maxEvaluations: number,
  ) {}

  /** One evaluation; a supplied property that contradicts the registry is 400, as in /check. `origin`: the request, for the decision log. */
  evaluation(body: AuthzenEvaluation, explain: boolean, origin?: RequestOrigin): Answer {
    return this.decideOne(evaluationInput(body), explain, origin);
  }

  /** Many evaluations (or one, when the request has no `evaluations`), under the semantic it asks for. */
  evaluations(body: AuthzenEvaluations, explain: boolean, origin?: RequestOrigin): EvaluationsAnswer | Promise<EvaluationsAnswer> {
    const { items, single, semantic } = readEvaluations(body, this.maxEvaluations);
    if (items === undefined) return this.decideOne(single!, explain, origin);
    const decide = this.checks.decider(items.length, explain, origin);
    const answer = (input: CheckInput | UndecidableItem): Answer => {
      if ('undecidable' in input) return undecidable(input.undecidable);
      try {
        const decided = then(decide(input), (decision) => authzenDecision(decision, explain));
        return decided instanceof Promise ? decided.catch(undecided) : decided;
      } catch (error) {
        return undecided(error);
      }
    };
    const evaluations = semantic === 'execute_all' ? answerEach(items, answer, undecided) : untilDecisive(items, answer, semantic, explain);
    return then(evaluations, (decided) => ({ evaluations: decided }));
  }

  private decideOne(input: CheckInput, explain: boolean, origin: RequestOrigin | undefined): Answer {
    try {
      const decided = this.checks.decider(1, explain, origin)(input);
      if (decided instanceof Promise) return decided.then((decision) => authzenDecision(decision, explain), refusedCall);
      return authzenDecision(decided, explain);
    } catch (error) {
      return refusedCall(error);
    }
  }
}

/**
 * The answers of `items` in order, up to and including the first that decides the whole call: a
 * denial (or an evaluation that could not be decided) under deny_on_first_deny, a permit under
 * permit_on_first_permit. Evaluations after it are not made. Synchronous unless one has to wait.
 */
function untilDecisive<Item>(
  items: readonly Item[],
  answer: (input: Item) => Answer,
  semantic: Exclude<EvaluationsSemantic, 'execute_all'>,
  explain: boolean,
): AuthzenDecision[] | Promise<AuthzenDecision[]> {
  const decisive = semantic === 'permit_on_first_permit';
  const answers: AuthzenDecision[] = [];
  /** Adds an answer; true once the call is decided. */
  const settle = (decided: AuthzenDecision): boolean => {
    if (decided.decision !== decisive) {
      answers.push(decided);
      return false;
    }
    // The denial that stops deny_on_first_deny says so, as the specification's example does, unless it says why already.
    answers.push(!decisive && !explain && decided.context === undefined ? STOPPED_AT_DENIAL : decided);
    return true;
  };
  const resume = async (from: number, pending: Promise<AuthzenDecision>): Promise<AuthzenDecision[]> => {
    if (settle(await pending)) return answers;
    for (let index = from + 1; index < items.length; index++) if (settle(await answer(items[index]!))) break;
    return answers;
  };
  for (let index = 0; index < items.length; index++) {
    const decided = answer(items[index]!);
    if (decided instanceof Promise) return resume(index, decided);
    if (settle(decided)) break;
  }
  return answers;
}
