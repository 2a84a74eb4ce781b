import { schemaIssues } from '../engine/index.js';
import type { Policy } from '../schemas/policy.js';
import type { SchemaDocument } from './schema-document.js';

/** Most problems listed for one set of policies: each condition of each policy may have a few. */
const MAX_LISTED_SCHEMA_PROBLEMS = 100;

/**
 * What the schemas say of policies read from files (see schemaIssues), one line each naming where
 * the policy was written (`labels`, by policy), the policy, the field, the rule and the problem; past
 * MAX_LISTED_SCHEMA_PROBLEMS, a last line says how many more there are.
 */
export function policySchemaProblems(policies: readonly Policy[], labels: readonly string[], document: SchemaDocument): string[] {
  const problems = policies.flatMap((policy, index) =>
    schemaIssues(policy, document, []).map(({ loc, msg }) => `${labels[index]}: policy '${policy.name}': ${loc.join('.')}: ${msg}`),
  );
  if (problems.length <= MAX_LISTED_SCHEMA_PROBLEMS) return problems;
  return [...problems.slice(0, MAX_LISTED_SCHEMA_PROBLEMS), `and ${problems.length - MAX_LISTED_SCHEMA_PROBLEMS} more`];
}
