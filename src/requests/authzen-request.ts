import type { AuthzenEvaluation, AuthzenEvaluationItem, AuthzenEvaluations, EvaluationsSemantic } from '../schemas/authzen.js';
import { actionInput, type ActionInput, type CheckInput, type EntityInput } from './check-request.js';
import { ClientError } from '../errors.js';
import { entityUri } from '../engine/scope.js';

type AuthzenEntity = AuthzenEvaluation['subject'];


/** An AuthZEN subject or resource as one side of a check: its uri, and its `properties` as supplied attributes. */
export function entityInput(entity: AuthzenEntity): EntityInput {
  const attributes = new Map<string, unknown>();
  const supplied = entity.properties as Record<string, unknown> | undefined;
  // A parsed JSON object inherits no enumerable keys, so for-in visits its own keys (`__proto__` too).
  if (supplied !== undefined) for (const key in supplied) attributes.set(key, supplied[key]);
  return { uri: entityUri(entity.type, entity.id), attributes };
}

/** The subject type whose id is a bearer token (a signed JWT): the principal is whoever the token's verified claims say. */
export const TOKEN_SUBJECT_TYPE = 'jwt';

/** An AuthZEN subject as a check's principal: an entity, or, of type `jwt`, a token with the properties as supplied attributes. */
export function subjectInput(subject: AuthzenEntity): EntityInput {
  if (subject.type !== TOKEN_SUBJECT_TYPE) return entityInput(subject);
  return { uri: undefined, attributes: entityInput(subject).attributes, credential: { token: subject.id, from: 'authzen-subject' } };
}

/**
 * An AuthZEN action and context as a check's, read by the reader /check uses: `action.properties` are
 * the action's attributes (`action_conditions`), `context` the check's context (`context_conditions`).
 */
export function actionAndContext(action: AuthzenEvaluation['action'], context: AuthzenEvaluation['context']): ActionInput {
  // The common evaluation names its action and nothing more: read as /check reads one, in an object of the same shape.
  if (action.properties === undefined && context === undefined) return { action: action.name };
  const input = actionInput({ action: { name: action.name, attributes: action.properties }, context }, ['body']);
  // Only a list of attributes can repeat a key; AuthZEN sends objects.
  if ('loc' in input) throw new ClientError(400, input.msg);
  return input;
}

/** The check an AuthZEN evaluation (schema-valid) asks for. */
export function evaluationInput(evaluation: AuthzenEvaluation): CheckInput {
  const principal = subjectInput(evaluation.subject);
  const resource = entityInput(evaluation.resource);
  const { action, actionAttributes, context } = actionAndContext(evaluation.action, evaluation.context);
  // Built key by key, in /check's order: checks of one shape keep the code that decides them fast.
  const input: CheckInput = { principal, resource, action };
  if (actionAttributes !== undefined) input.actionAttributes = actionAttributes;
  if (context !== undefined) input.context = context;
  return input;
}

/** An item of an evaluations request that cannot be decided as it stands (a key missing after the defaults): why, as a 400 would say. */
export interface UndecidableItem {
  undecidable: string;
}

/** An evaluations request (schema-valid) read: each item with the top-level defaults applied, and how to run them. */
export interface EvaluationsInput {
  /** Absent when the request had no `evaluations` (or an empty list): then it is one evaluation, answered as /access/v1/evaluation. */
  items?: (CheckInput | UndecidableItem)[];
  single?: CheckInput;
  semantic: EvaluationsSemantic;
}

const KEYS = ['subject', 'action', 'resource'] as const;

/**
 * Applies the top-level `subject`, `action`, `resource` and `context` to every item that lacks them
 * (an item's own key replaces the default whole). An item that cannot be read then (left without one
 * of the three) is an UndecidableItem, answered on its own; a request with more items than a bulk
 * check may hold is 400, and so is a request without items that lacks one of the three.
 */
export function readEvaluations(body: AuthzenEvaluations, maxItems: number): EvaluationsInput {
  const semantic = body.options?.evaluations_semantic ?? 'execute_all';
  const list = body.evaluations ?? [];
  if (list.length === 0) return { single: evaluationInput(complete(body, body, 'body')), semantic };
  if (list.length > maxItems) {
    throw new ClientError(400, `evaluations holds ${list.length} items, more than the ${maxItems} one call may hold: send them in several calls`);
  }
  return { items: list.map((item, index) => itemInput(item, body, `evaluations[${index}]`)), semantic };
}

function itemInput(item: AuthzenEvaluationItem, defaults: AuthzenEvaluations, at: string): CheckInput | UndecidableItem {
  try {
    return evaluationInput(complete(item, defaults, at));
  } catch (error) {
    if (error instanceof ClientError) return { undecidable: error.detail };
    throw error;
  }
}

function complete(item: AuthzenEvaluationItem, defaults: AuthzenEvaluations, at: string): AuthzenEvaluation {
  const evaluation = {
    subject: item.subject ?? defaults.subject,
    action: item.action ?? defaults.action,
    resource: item.resource ?? defaults.resource,
    context: item.context ?? defaults.context,
  };
  for (const key of KEYS) {
    if (evaluation[key] === undefined) {
      const why = at === 'body' ? 'the request has no evaluations' : `${at} has none and the request gives no top-level ${key} to default to`;
      throw new ClientError(400, `'${key}' is required: ${why}`);
    }
  }
  return evaluation as AuthzenEvaluation;
}
