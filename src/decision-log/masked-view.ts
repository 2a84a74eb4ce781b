import { maskedValue, type DecisionLogMask, type MaskMethod } from './mask.js';

// What an operator's views of kept checks (impact samples, shadow disagreements) show of a check and
// of its explanations: the values `--decision-log-mask` names masked as the decision log masks them,
// so that a read key sees no value the log hides.

type Part = keyof DecisionLogMask;

const UNDECIDABLE_MASKED = 'the operator cannot evaluate the value read, which is masked';
type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** How `key` of `part` is masked; undefined when it is not. */
const methodOf = (mask: DecisionLogMask, part: Part, key: string): MaskMethod | undefined => {
  const masks = mask[part];
  return masks !== undefined && Object.hasOwn(masks, key) ? masks[key] : undefined;
};

/** An attributes object with the masked ones masked. */
function maskedAttributes(attributes: unknown, part: Part, mask: DecisionLogMask): unknown {
  if (!isObject(attributes)) return attributes;
  const masked: Json = {};
  for (const [key, value] of Object.entries(attributes)) {
    const method = methodOf(mask, part, key);
    masked[key] = method === undefined ? value : maskedValue(value, method);
  }
  return masked;
}

/** An entity (`{uri, attributes}`) with its masked attributes masked. */
const maskedEntity = (entity: unknown, part: Part, mask: DecisionLogMask): unknown =>
  isObject(entity) ? { ...entity, attributes: maskedAttributes(entity.attributes, part, mask) } : entity;

const isMaskless = (mask: DecisionLogMask) => Object.keys(mask).length === 0;

/** A check as an operator view shows it (`{principal, resource, action, action_attributes?, context?}`), masked. */
export function maskedCheck(check: Json, mask: DecisionLogMask): Json {
  if (isMaskless(mask)) return check;
  return {
    ...check,
    principal: maskedEntity(check.principal, 'principal', mask),
    resource: maskedEntity(check.resource, 'resource', mask),
    ...(check.action_attributes !== undefined && { action_attributes: maskedAttributes(check.action_attributes, 'action', mask) }),
    ...(check.context !== undefined && { context: maskedAttributes(check.context, 'context', mask) }),
  };
}

/** The masking of the value a condition's path (`attributes.<key>…`) leads to on `part`, or of the one a reference (`<part>.attributes.<key>…`) reads. */
function methodAt(mask: DecisionLogMask, part: Part, path: unknown): MaskMethod | undefined {
  if (typeof path !== 'string') return undefined;
  const [first, key] = path.split('.', 2);
  return first === 'attributes' && key !== undefined ? methodOf(mask, part, key) : undefined;
}

function methodOfReference(mask: DecisionLogMask, reference: unknown): MaskMethod | undefined {
  if (typeof reference !== 'string') return undefined;
  const dot = reference.indexOf('.');
  const part = reference.slice(0, dot) as Part;
  return ['principal', 'resource', 'action', 'context'].includes(part) ? methodAt(mask, part, reference.slice(dot + 1)) : undefined;
}

/** A failed condition (or group, or set) of an explanation on `part`, the values it quotes masked. */
function maskedFailure(failed: unknown, part: Part, mask: DecisionLogMask): unknown {
  if (!isObject(failed)) return failed;
  const masked: Json = { ...failed };
  const actualMethod = methodAt(mask, part, failed.path);
  if (actualMethod !== undefined && 'actual' in failed) {
    masked.actual = maskedValue(failed.actual, actualMethod);
    // Why a value cannot be evaluated quotes it.
    if (typeof failed.undecidable === 'string') masked.undecidable = UNDECIDABLE_MASKED;
    if (typeof failed.why === 'string') masked.why = UNDECIDABLE_MASKED;
  }
  const expectedMethod = methodOfReference(mask, failed.value_from);
  if (expectedMethod !== undefined && 'expected' in failed) masked.expected = maskedValue(failed.expected, expectedMethod);
  if (Array.isArray(failed.alternatives)) masked.alternatives = failed.alternatives.map((alternative) => maskedFailure(alternative, part, mask));
  if (failed.failed !== undefined) masked.failed = maskedFailure(failed.failed, part, mask);
  return masked;
}

/** An explanation (see src/engine/explain.ts) as an operator view shows it, masked. */
export function maskedExplanation(explanation: Json, mask: DecisionLogMask): Json {
  if (isMaskless(mask)) return explanation;
  const policies = Array.isArray(explanation.policies)
    ? explanation.policies.map((policy: unknown) => {
        if (!isObject(policy) || !Array.isArray(policy.rules)) return policy;
        return {
          ...policy,
          rules: policy.rules.map((rule: unknown) => {
            if (!isObject(rule)) return rule;
            const masked: Json = { ...rule };
            if (isObject(rule.failed)) masked.failed = maskedFailure(rule.failed, rule.failed.side as Part, mask);
            if (Array.isArray(rule.undecidable)) masked.undecidable = rule.undecidable.map((condition: unknown) => (isObject(condition) ? maskedFailure(condition, condition.side as Part, mask) : condition));
            return masked;
          }),
        };
      })
    : explanation.policies;
  return {
    ...explanation,
    principal: maskedEntity(explanation.principal, 'principal', mask),
    resource: maskedEntity(explanation.resource, 'resource', mask),
    policies,
    ...(explanation.action_attributes !== undefined && { action_attributes: maskedAttributes(explanation.action_attributes, 'action', mask) }),
    ...(explanation.context !== undefined && { context: maskedAttributes(explanation.context, 'context', mask) }),
  };
}
