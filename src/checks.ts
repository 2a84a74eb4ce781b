import type { CheckRequest } from './schemas/check.js';
import type { ValidationIssue } from './schemas/errors.js';
import { evaluate, type Decision } from './engine/index.js';
import { readCheckRequest, type CheckInput } from './registry/check-request.js';
import { AttributeConflict, resolveCheck, type RegisteredAttributes } from './registry/resolve.js';
import type { PolicySnapshots } from './snapshot/policy-snapshots.js';
import { ClientError, RequestValidationError } from './errors.js';

/** Answers checks: reads the request, resolves attributes, evaluates against the current snapshot. */
export class CheckService {
  constructor(
    private readonly snapshots: PolicySnapshots,
    private readonly registered: RegisteredAttributes,
  ) {}

  /** Throws RequestValidationError (422) for an unusable request and ClientError (400) for an attribute conflict. */
  async check(request: CheckRequest): Promise<Decision> {
    const input = readCheckRequest(request, ['body']);
    if (Array.isArray(input)) throw new RequestValidationError(input);
    try {
      return await this.decide(input);
    } catch (error) {
      if (error instanceof AttributeConflict) throw new ClientError(400, error.message);
      throw error;
    }
  }

  /** A schema error in any item rejects the whole batch; a conflict only denies its own item. */
  async checkMany(requests: CheckRequest[]): Promise<Decision[]> {
    const inputs: CheckInput[] = [];
    const issues: ValidationIssue[] = [];
    requests.forEach((request, index) => {
      const input = readCheckRequest(request, ['body', index]);
      if (Array.isArray(input)) issues.push(...input);
      else inputs.push(input);
    });
    if (issues.length > 0) throw new RequestValidationError(issues);
    return Promise.all(
      inputs.map((input) =>
        this.decide(input).catch((error: unknown): Decision => {
          if (error instanceof AttributeConflict) return { allowed: false, reason: error.message };
          throw error;
        }),
      ),
    );
  }

  private async decide(input: CheckInput): Promise<Decision> {
    const request = await resolveCheck(input, this.registered);
    return evaluate(this.snapshots.current, request);
  }
}
