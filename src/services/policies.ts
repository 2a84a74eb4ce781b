import type { AnsweredPolicy, Condition, ConditionItem, Policy } from '../schemas/policy.js';
import { mapConditions } from '../engine/condition-items.js';
import { lendersTo, setsStillTaken, setsStillTakenMessage, sharedSetIssues } from '../engine/shared-sets.js';
import type { ValidationIssue } from '../schemas/errors.js';
import type { WriteWarnings } from './write-warnings.js';
import {
  buildSimplePolicy,
  normalizePolicy,
  policyIssues,
  reportWarnings,
  schemaIssues,
  slugify,
  spellOperator,
  type AttributeSchemaSets,
  type OperatorStyle,
  type PolicyLimits,
} from '../engine/index.js';
import { runInSlices } from './work-in-slices.js';
import { PolicySetReader } from '../policy-files/policy-set.js';
import type { CheckInput } from '../requests/check-request.js';
import type { Store } from '../store/store.js';
import { DuplicateKeyError, type CheckedAgainst } from '../store/errors.js';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import type { PolicyRoles, PolicyWriter } from './policy-roles.js';
import { ClientError, managedInFiles, notFound, RequestValidationError } from '../errors.js';
import { applied } from './applied.js';
import { isPolicyRecord, policyTarget, type AuditRecord, type Writer } from '../audit/record.js';
import type { AuditPage, AuditTrail } from '../audit/audit-trail.js';
import type { SchemaEnforcement } from '../config/config.js';

/** The attribute schemas policies are checked against: a write breaking them is refused under `reject`; validate reports them always. */
export interface PolicySchemas {
  /** The document in force, read at each write (schemas change). */
  inForce: { readonly document: AttributeSchemaSets | undefined };
  enforcement: SchemaEnforcement;
}

/** Most schema warnings one validation reports: each condition may have a few. */
const MAX_SCHEMA_WARNINGS = 100;

/** What `POST /admin/policies/validate` answers for policies that `POST /admin/policies` would accept. */
export interface ValidationReport {
  valid: true;
  warnings: ValidationIssue[];
}

/**
 * A policy as every answer gives it: operators spelled in `style`, and each rule with its
 * description, null when it has none (policies stored before rules had descriptions lack the field).
 */
export function policyAnswer(policy: Policy, style: OperatorStyle): AnsweredPolicy {
  const spelledCondition = ({ path, operator, value, value_from }: Condition): Condition => {
    const spelling = { path, operator: spellOperator(operator, style) };
    const withValue = value === undefined ? spelling : { ...spelling, value };
    return value_from === undefined ? withValue : { ...withValue, value_from };
  };
  const spelled = (items: ConditionItem[]) => items.map((item) => mapConditions(item, spelledCondition) as ConditionItem);
  const sets = policy.condition_sets;
  return {
    ...policy,
    ...(sets && { condition_sets: Object.fromEntries(Object.entries(sets).map(([name, items]) => [name, spelled(items)])) as Policy['condition_sets'] }),
    rules: policy.rules.map((rule) => ({
      name: rule.name,
      description: rule.description ?? null,
      effect: rule.effect,
      principal_conditions: spelled(rule.principal_conditions),
      resource_conditions: spelled(rule.resource_conditions),
      ...(rule.action_conditions === undefined ? {} : { action_conditions: spelled(rule.action_conditions) }),
      ...(rule.context_conditions === undefined ? {} : { context_conditions: spelled(rule.context_conditions) }),
      actions: rule.actions,
    })),
  };
}

/**
 * Policy administration: validates and normalizes what clients send, writes it durably, and
 * returns only once the snapshot that checks use includes the change (read your writes).
 */
export class PolicyService {
  private readonly reader: PolicySetReader;

  constructor(
    private readonly store: Store,
    private readonly snapshots: PolicySnapshots,
    private readonly settings: PolicyLimits & { operatorStyle: OperatorStyle; maxAnswerSize: number },
    private readonly audit: AuditTrail,
    /** Where policies are read and written; policies from files (`--policies`) have no writer, so writes are refused. */
    private readonly roles: PolicyRoles,
    private readonly attributeSchemas?: PolicySchemas,
    /** The schemas a write was checked against, for the store to hold it to (see CheckedAgainst); undefined: no such check. */
    private readonly checkedAgainst: () => CheckedAgainst | undefined = () => undefined,
  ) {
    this.reader = new PolicySetReader(settings);
  }

  async list(): Promise<AnsweredPolicy[]> {
    const policies = await this.roles.reader.all();
    return policies.map((policy) => this.answer(policy));
  }

  /** Where the policy named was written (see PolicyReader.sourceOf). */
  sourceOf(name: string): string {
    return this.roles.reader.sourceOf(name);
  }

  async get(name: string): Promise<AnsweredPolicy> {
    const policy = await this.roles.reader.named(name);
    if (policy === undefined) throw notFound('Policy');
    return this.answer(policy);
  }

  /** `warn` hears what the policy contradicts of the attribute schemas under `warn` (as every write's `warn` does). */
  async create(sent: Policy, by: Writer, warn?: WriteWarnings): Promise<AnsweredPolicy> {
    const writer = this.writer();
    const { policy, contradicted } = this.accept(sent);
    this.holdSharedSets(policy.name, policy);
    try {
      await writer.createPolicy(policy, by, this.checkedAgainst());
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw new ClientError(409, error.message);
      throw error;
    }
    await this.applied(`Policy '${policy.name}' was saved`);
    if (contradicted.length > 0) warn?.(contradicted);
    return this.answer(policy);
  }

  /**
   * The one-rule policy of `POST /admin/policies/simple`. Attribute keys become paths, so a key
   * with a `.` could not be matched as sent and is refused.
   */
  async createSimple(name: string, check: CheckInput, by: Writer, warn?: WriteWarnings): Promise<AnsweredPolicy> {
    this.writer(); // refused before the name and the check are read, as every write is
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
    return this.create(buildSimplePolicy(slug, check.principal, check.resource, check.action, this.settings.operatorStyle), by, warn);
  }

  /** Replaces the policy named `name`, which keeps its place in creation order. */
  async replace(name: string, sent: Policy, by: Writer, warn?: WriteWarnings): Promise<AnsweredPolicy> {
    const writer = this.writer();
    const { policy, contradicted } = this.accept(sent);
    if (policy.name !== name) {
      throw new ClientError(400, `Name mismatch: the body names '${policy.name}' (slugified), the path '${name}'`);
    }
    const stored = policy.shadow === undefined ? undefined : await this.roles.reader.named(name);
    if (stored !== undefined && stored.shadow === undefined) {
      throw new ClientError(
        409,
        `Policy '${name}' is live: written with 'shadow' it would stop deciding. To try a change of it, write a shadow of it under another name ("shadow": "${name}"); to take it out of force, delete it`,
      );
    }
    this.holdSharedSets(name, policy);
    if (!(await writer.replacePolicy(policy, by, this.checkedAgainst()))) throw notFound('Policy');
    await this.applied(`Policy '${policy.name}' was saved`);
    if (contradicted.length > 0) warn?.(contradicted);
    return this.answer(policy);
  }

  /**
   * Makes the shadow policy `name` live in one write: it is rewritten without `shadow` when it was
   * added beside the live policies; when it stood in for a live policy, that policy takes its rules
   * (keeping its name and place) and the shadow is deleted, together, each audited.
   */
  async promote(name: string, by: Writer, warn?: WriteWarnings): Promise<AnsweredPolicy> {
    const writer = this.writer();
    const stored = await this.roles.reader.named(name);
    if (stored === undefined) throw notFound('Policy');
    const { shadow, ...promoted } = stored;
    if (shadow === undefined) throw new ClientError(409, `Policy '${name}' is live already: only a shadow policy is promoted`);
    // Beside the live policies (or in place of one deleted since), the shadow is rewritten live under its own name.
    const target = shadow !== true && (await this.roles.reader.named(shadow)) !== undefined ? shadow : name;
    const { policy, contradicted } = this.accept({ ...promoted, name: target });
    this.holdSharedSets(target, policy);
    const outcome = await writer.promotePolicy(policy, name, stored, by, this.checkedAgainst());
    if (outcome === 'gone') throw new ClientError(409, `Policy '${target}' or its shadow '${name}' was deleted meanwhile: nothing was promoted`);
    if (outcome === 'changed') throw new ClientError(409, `The shadow '${name}' was changed while it was being promoted: nothing was promoted; promote it again to make its latest version live`);
    await this.applied(`Policy '${target}' was saved`);
    if (contradicted.length > 0) warn?.(contradicted);
    return this.answer(policy);
  }

  async delete(name: string, by: Writer): Promise<true> {
    const writer = this.writer();
    this.holdSharedSets(name, undefined);
    if (!(await writer.deletePolicy(name, by))) throw notFound('Policy');
    await this.applied(`Policy '${name}' was deleted`);
    return true;
  }

  /** The records of the writes that made each kept version of the policy, newest first; a page of them. */
  async history(name: string, page: { limit: number; cursor?: string }): Promise<AuditPage> {
    const history = await this.audit.page({ target: policyTarget(name) }, page);
    if (history.records.length === 0 && page.cursor === undefined && (await this.store.getPolicy(name)) === undefined) {
      throw notFound('Policy');
    }
    return history;
  }

  async version(name: string, version: number): Promise<AuditRecord> {
    const record = await this.store.policyVersion(name, version);
    if (record === undefined) throw new ClientError(404, `Policy '${name}' has no version ${version} (it may be older than the audit retention)`);
    return record;
  }

  /**
   * Makes version `version` of the policy current again, as a write of its own; a deleted policy
   * comes back (last in creation order). The version must still pass today's limits.
   */
  async restore(name: string, version: number, by: Writer, warn?: WriteWarnings): Promise<AnsweredPolicy> {
    const writer = this.writer();
    const record = await this.version(name, version);
    if (!isPolicyRecord(record) || record.after === null) {
      throw new ClientError(400, `Version ${version} of policy '${name}' is its deletion; restore an earlier version`);
    }
    const { policy, contradicted } = this.accept(record.after);
    this.holdSharedSets(name, policy);
    try {
      await writer.restorePolicy(policy, version, by, this.checkedAgainst());
    } catch (error) {
      // Another process re-created the deleted policy while this restore ran: nothing was written.
      if (error instanceof DuplicateKeyError) throw new ClientError(409, `${error.message}; restore again to replace it`);
      throw error;
    }
    await this.applied(`Version ${version} of policy '${name}' was restored`);
    if (contradicted.length > 0) warn?.(contradicted);
    return this.answer(policy);
  }

  private applied(done: string): Promise<void> {
    return applied(this.snapshots, done);
  }

  /**
   * Checks a policy or a list of policies as a write would, without writing: 422 with the issues a
   * write would get, else warnings about what is valid but probably not meant, each policy taken
   * as part of the current set (in place of the stored policy of its name, or after the others).
   * The report is held to the answer budget, and made in slices between which other requests run.
   */
  async validate(body: unknown): Promise<ValidationReport> {
    const locate = (index: number) => (Array.isArray(body) ? ['body', index] : ['body']);
    const read = this.reader.read(Array.isArray(body) ? body : [body], locate);
    if ('issues' in read) throw new RequestValidationError(read.issues);
    const { policies } = read;
    const set = [...this.snapshots.policies];
    const storedAt = new Map(set.map((policy, position) => [policy.name, position]));
    const positions = policies.map((policy) => {
      const stored = storedAt.get(policy.name);
      if (stored === undefined) return set.push(policy) - 1;
      set[stored] = policy;
      return stored;
    });
    // What a policy takes from another is looked for in the set it would join, as a write does.
    const shared = policies.flatMap((policy, index) => (policy.shadow === undefined ? sharedSetIssues(policy, set, locate(index), this.settings.maxConditionsPerRule) : []));
    if (shared.length > 0) throw new RequestValidationError(shared);
    const sentAt = new Map(positions.map((position, index) => [position, index]));
    const warnings = await runInSlices(reportWarnings(set, positions, (position) => locate(sentAt.get(position)!), { maxLength: this.settings.maxAnswerSize }));
    const schemas = this.attributeSchemas?.inForce.document;
    if (schemas === undefined) return { valid: true, warnings };
    const schemaWarnings = policies.flatMap((policy, index) => schemaIssues(policy, schemas, locate(index)));
    return { valid: true, warnings: [...warnings, ...schemaWarnings.slice(0, MAX_SCHEMA_WARNINGS)] };
  }

  /**
   * Holds a write of policy `name` (`next`; undefined: its deletion) to the sets policies share, as
   * the live policies stand: what it takes `from` another policy is defined there (422), and no other
   * policy loses a set it takes from this one (409). Writes racing in another process may still
   * cross; a reference left without its set then fails closed (see ConditionCompiler.set). A shadow
   * is not held: it lends no live policy a set, and one it takes out of reach fails closed.
   */
  private holdSharedSets(name: string, next: Policy | undefined): void {
    if (next?.shadow !== undefined) return;
    const live = this.snapshots.policies;
    const { maxConditionsPerRule } = this.settings;
    const after = [...live.filter((policy) => policy.name !== name), ...(next === undefined ? [] : [next])];
    if (next !== undefined) {
      const issues = sharedSetIssues(next, after, ['body'], maxConditionsPerRule);
      if (issues.length > 0) throw new RequestValidationError(issues);
    }
    const write = next === undefined ? 'deleted' : 'written so';
    const taken = setsStillTaken(name, next, live);
    if (taken.length > 0) throw new ClientError(409, setsStillTakenMessage(name, taken, write));
    // A set that grows grows every rule that takes it.
    const outgrown = live
      .filter((policy) => policy.name !== name && lendersTo(policy).includes(name))
      .flatMap((taker) => sharedSetIssues(taker, after, [], maxConditionsPerRule).map((issue) => `policy '${taker.name}' ${issue.loc.join('.')}: ${issue.msg}`));
    if (outgrown.length > 0) throw new ClientError(409, setsStillTakenMessage(name, outgrown, write));
  }

  /** Where policy writes go; 409 when there is no writer (policies from files). */
  private writer(): PolicyWriter {
    const { roles } = this;
    if (roles.writer !== undefined) return roles.writer;
    throw managedInFiles('Policies', `files in ${roles.filesDir} (--policies)`, 'the files', 'policy reads, validation and the registry still work');
  }

  /**
   * The policy to write, normalized, and what it contradicts of the attribute schemas: that refuses it
   * under `reject`; under `warn` it is written, and the write's `warn` hears of it once it is.
   */
  private accept(sent: Policy): { policy: Policy; contradicted: ValidationIssue[] } {
    const issues = policyIssues(sent, ['body'], this.settings);
    const schemas = this.attributeSchemas?.inForce.document;
    const enforcement = this.attributeSchemas?.enforcement ?? 'off';
    const contradicted = issues.length === 0 && schemas !== undefined && enforcement !== 'off' ? schemaIssues(sent, schemas, ['body']) : [];
    if (enforcement === 'reject') issues.push(...contradicted);
    if (issues.length > 0) throw new RequestValidationError(issues);
    return { policy: normalizePolicy(sent), contradicted };
  }

  private answer(policy: Policy): AnsweredPolicy {
    return policyAnswer(policy, this.settings.operatorStyle);
  }
}
