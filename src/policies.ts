import type { Policy } from './schemas/policy.js';
import { buildSimplePolicy, normalizePolicy, policyIssues, slugify, type PolicyLimits } from './engine/index.js';
import type { CheckInput } from './registry/check-request.js';
import { DuplicateKeyError, type Store } from './store/store.js';
import type { PolicySnapshots } from './snapshot/policy-snapshots.js';
import { ClientError, notFound, RequestValidationError, UnavailableError } from './errors.js';

/**
 * Policy administration: validates and normalizes what clients send, writes it durably, and
 * returns only once the snapshot that checks use includes the change (read your writes).
 */
export class PolicyService {
  constructor(
    private readonly store: Store,
    private readonly snapshots: PolicySnapshots,
    private readonly limits: PolicyLimits,
  ) {}

  async list(): Promise<Policy[]> {
    return (await this.store.loadPolicies()).policies;
  }

  async get(name: string): Promise<Policy> {
    const policy = await this.store.getPolicy(name);
    if (policy === undefined) throw notFound('Policy');
    return policy;
  }

  async create(sent: Policy): Promise<Policy> {
    const policy = this.accept(sent);
    try {
      await this.store.createPolicy(policy);
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw new ClientError(409, error.message);
      throw error;
    }
    await this.applied(`Policy '${policy.name}' was saved`);
    return policy;
  }

  /**
   * The one-rule policy of `POST /admin/policies/simple`. Attribute keys become paths, so a key
   * with a `.` could not be matched as sent and is refused.
   */
  async createSimple(name: string, check: CheckInput): Promise<Policy> {
    const slug = slugify(name);
    if (slug === '') {
      throw new RequestValidationError([{ loc: ['query', 'name'], msg: `name '${name}' has no letters or digits to make a slug from`, type: 'value_error' }]);
    }
    const dotted = (['principal', 'resource'] as const).flatMap((side) =>
      [...check[side].attributes.keys()]
        .filter((key) => key.includes('.'))
        .map((key) => ({ loc: ['body', side, 'attributes', key], msg: "attribute keys of a simple policy cannot contain '.'", type: 'value_error' })),
    );
    if (dotted.length > 0) throw new RequestValidationError(dotted);
    return this.create(buildSimplePolicy(slug, check.principal, check.resource, check.action));
  }

  /** Replaces the policy named `name`, which keeps its place in creation order. */
  async replace(name: string, sent: Policy): Promise<Policy> {
    const policy = this.accept(sent);
    if (policy.name !== name) {
      throw new ClientError(400, `Name mismatch: the body names '${policy.name}' (slugified), the path '${name}'`);
    }
    if (!(await this.store.replacePolicy(policy))) throw notFound('Policy');
    await this.applied(`Policy '${policy.name}' was saved`);
    return policy;
  }

  async delete(name: string): Promise<true> {
    if (!(await this.store.deletePolicy(name))) throw notFound('Policy');
    await this.applied(`Policy '${name}' was deleted`);
    return true;
  }

  /**
   * Waits for the snapshot to include a write that is already durable. When the store cannot be
   * read back, the client must not repeat the write (it would be refused as a duplicate): the
   * snapshot builder keeps retrying and applies it.
   */
  private async applied(done: string): Promise<void> {
    try {
      await this.snapshots.refresh();
    } catch (error) {
      throw new UnavailableError(
        `${done}, but this process could not load it yet (${(error as Error).message}); ` +
          'it will apply it as soon as the store answers: do not send the write again',
      );
    }
  }

  private accept(sent: Policy): Policy {
    const issues = policyIssues(sent, ['body'], this.limits);
    if (issues.length > 0) throw new RequestValidationError(issues);
    return normalizePolicy(sent);
  }
}
