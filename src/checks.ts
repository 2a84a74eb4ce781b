import type { CheckRequest } from './schemas/check.js';
import { evaluate, type Decision, type DecisionRequest } from './engine/index.js';
import { readCheckRequest, type CheckInput } from './registry/check-request.js';
import { AttributeConflict, resolveCheck, type RegisteredAttributes } from './registry/resolve.js';
import type { PolicySnapshots } from './snapshot/policy-snapshots.js';
import { ClientError, RequestValidationError } from './errors.js';

const conflictAsClientError = (error: unknown): never => {
  if (error instanceof AttributeConflict) throw new ClientError(400, error.message);
  throw error;
};

const conflictAsDenial = (error: unknown): Decision => {
  if (error instanceof AttributeConflict) return { allowed: false, reason: error.message };
  throw error;
};

/**
 * Answers checks: reads the request, resolves attributes, evaluates against the current snapshot.
 * Stays synchronous whenever the registry answers from its cache, so a check costs no promise.
 */
export class CheckService {
  constructor(
    private readonly snapshots: PolicySnapshots,
    private readonly registered: RegisteredAttributes,
  ) {}

  /** Throws RequestValidationError (422) for an unusable request and ClientError (400) for an attribute conflict. */
  check(request: CheckRequest): Decision | Promise<Decision> {
    const input = readCheckRequest(request, ['body']);
    if (Array.isArray(input)) throw new RequestValidationError(input);
    try {
      const decision = this.decide(input);
      return decision instanceof Promise ? decision.catch(conflictAsClientError) : decision;
    } catch (error) {
      return conflictAsClientError(error);
    }
  }

  /** Decides checks already read (see readBulkBody); a conflict only denies its own item. */
  checkMany(inputs: CheckInput[]): Decision[] | Promise<Decision[]> {
    let waiting = false;
    const decisions = inputs.map((input) => {
      let decision: Decision | Promise<Decision>;
      try {
        decision = this.decide(input);
      } catch (error) {
        return conflictAsDenial(error);
      }
      if (decision instanceof Promise) {
        waiting = true;
        return decision.catch(conflictAsDenial);
      }
      return decision;
    });
    return waiting ? Promise.all(decisions) : (decisions as Decision[]);
  }

  /** Throws (or rejects with) AttributeConflict. */
  private decide(input: CheckInput): Decision | Promise<Decision> {
    const request = resolveCheck(input, this.registered);
    if (request instanceof Promise) return request.then(this.evaluateNow);
    return this.evaluateNow(request);
  }

  /** Evaluates against the snapshot current at this moment, which includes every acknowledged policy write. */
  private readonly evaluateNow = (request: DecisionRequest): Decision => evaluate(this.snapshots.current, request);
}
