import type { Condition, Policy } from '../schemas/policy.js';
import { spellOperator, type OperatorStyle } from './operators/index.js';

export interface SimplePolicySide {
  uri?: string;
  attributes: ReadonlyMap<string, unknown>;
}

function conditionsFor(side: SimplePolicySide, style: OperatorStyle): Condition[] {
  const operator = spellOperator('==', style);
  const conditions: Condition[] = [];
  // A side named only by uri would otherwise match every entity: pin the uri.
  if (side.uri !== undefined) conditions.push({ path: 'uri', operator, value: side.uri });
  for (const [key, value] of side.attributes) conditions.push({ path: `attributes.${key}`, operator, value });
  return conditions;
}

/**
 * The policy behind `POST /admin/policies/simple`: one `allow` rule named like the policy, each
 * attribute an equality condition (`==`, or `equals` in the eunomia style) with its value as sent,
 * `default_effect` deny. `name` is already a slug.
 */
export function buildSimplePolicy(
  name: string,
  principal: SimplePolicySide,
  resource: SimplePolicySide,
  action: string,
  style: OperatorStyle,
): Policy {
  return {
    version: '1.0',
    name,
    description: null,
    rules: [
      {
        name,
        effect: 'allow',
        principal_conditions: conditionsFor(principal, style),
        resource_conditions: conditionsFor(resource, style),
        actions: [action],
      },
    ],
    default_effect: 'deny',
  };
}
