import type { FastifySchemaValidationError } from 'fastify';
import type { ValidateFunction } from 'ajv';
import { policySchema, type Policy } from '../schemas/policy.js';
import type { Location, ValidationIssue } from '../schemas/errors.js';
import { compileListingErrors, validationIssues } from '../schemas/validation.js';
import { MAX_LISTED_ISSUES } from '../errors.js';
import { normalizePolicy, policyIssues, type PolicyLimits } from '../engine/index.js';


/**
 * Reads policies from untrusted JSON values as a policy write does (schema with its defaults, then
 * the engine's checks, then names slugified), for the validate route, `verdict test` and policy
 * files alike. Names must be unique among the policies read together.
 */
export class PolicySetReader {
  /** Compiled by the first read, so that a start compiles no schema it may never use. */
  private compiledSchema: ValidateFunction<Policy> | undefined;

  constructor(readonly limits: PolicyLimits) {}

  private get matchesSchema(): ValidateFunction<Policy> {
    return (this.compiledSchema ??= compileListingErrors<Policy>(policySchema));
  }

  /** The policies, normalized, or every issue found, each located under `locate(index)`. */
  read(values: readonly unknown[], locate: (index: number) => Location): { policies: Policy[] } | { issues: ValidationIssue[] } {
    const issues: ValidationIssue[] = [];
    // Past the issues a 422 lists, the other values are not looked at: a list of thousands of broken policies costs no more.
    for (let index = 0; index < values.length && issues.length <= MAX_LISTED_ISSUES; index++) {
      const value = values[index];
      if (this.matchesSchema(value)) {
        issues.push(...policyIssues(value, locate(index), this.limits));
        continue;
      }
      const found = validationIssues(this.matchesSchema.errors as FastifySchemaValidationError[], 'body');
      issues.push(...found.map((issue) => ({ ...issue, loc: [...locate(index), ...issue.loc.slice(1)] })));
    }
    if (issues.length > 0) return { issues };
    const policies = (values as Policy[]).map(normalizePolicy);
    const names = new Set<string>();
    policies.forEach((policy, index) => {
      if (names.has(policy.name)) issues.push({ loc: [...locate(index), 'name'], msg: `policy '${policy.name}' is already defined earlier`, type: 'value_error' });
      names.add(policy.name);
    });
    return issues.length > 0 ? { issues } : { policies };
  }
}
