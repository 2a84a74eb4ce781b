/**
 * What Eunomia's clients (v0.3.10) send and parse, written down from their public models so that
 * tests can hold Verdict to them: the Python SDK validates every answer with pydantic models
 * (`Policy`, `Rule`, `Condition` forbid unknown fields and know only Eunomia's operator names;
 * `EntityInDb` needs a type and ISO timestamps; `CheckResponse` a boolean and an optional reason),
 * and sends `model_dump()` of its request models, nulls included. The TypeScript SDK sends plain
 * objects through JSON.stringify, so its `undefined` fields are simply absent.
 */

/** The Python SDK's ConditionOperator (and the TypeScript SDK's): no `==`, `!=`, `>`… among them. */
export const EUNOMIA_OPERATORS = [
  'equals', 'not_equals', 'contains', 'not_contains', 'startswith', 'endswith',
  'gt', 'gte', 'lt', 'lte', 'in', 'not_in',
];
const EFFECTS = ['allow', 'deny'];
const ENTITY_TYPES = ['resource', 'principal'];

type Problems = string[];

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isOptionalString = (value: unknown) => value === undefined || value === null || typeof value === 'string';
/** pydantic's datetime accepts ISO 8601; Verdict promises UTC with a `Z`. */
const isIsoUtc = (value: unknown) => typeof value === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(value) && !Number.isNaN(Date.parse(value));

/** pydantic's extra="forbid": a field the model does not know fails the whole parse. */
function unknownFields(value: Record<string, unknown>, known: string[], at: string): Problems {
  return Object.keys(value).filter((key) => !known.includes(key)).map((key) => `${at}.${key}: extra fields not permitted`);
}

function conditionProblems(condition: unknown, at: string): Problems {
  if (!isObject(condition)) return [`${at}: not an object`];
  const problems = unknownFields(condition, ['path', 'operator', 'value'], at);
  if (typeof condition.path !== 'string') problems.push(`${at}.path: not a string`);
  if (!EUNOMIA_OPERATORS.includes(condition.operator as string)) problems.push(`${at}.operator: '${String(condition.operator)}' is not a ConditionOperator`);
  if (!('value' in condition)) problems.push(`${at}.value: missing`);
  return problems;
}

function ruleProblems(rule: unknown, at: string): Problems {
  if (!isObject(rule)) return [`${at}: not an object`];
  const problems = unknownFields(rule, ['name', 'description', 'effect', 'principal_conditions', 'resource_conditions', 'actions'], at);
  if (typeof rule.name !== 'string') problems.push(`${at}.name: not a string`);
  if (!isOptionalString(rule.description)) problems.push(`${at}.description: not a string or null`);
  if (!EFFECTS.includes(rule.effect as string)) problems.push(`${at}.effect: not a PolicyEffect`);
  for (const side of ['principal_conditions', 'resource_conditions']) {
    const conditions = rule[side] ?? [];
    if (!Array.isArray(conditions)) problems.push(`${at}.${side}: not a list`);
    else conditions.forEach((condition, index) => problems.push(...conditionProblems(condition, `${at}.${side}.${index}`)));
  }
  if (!Array.isArray(rule.actions) || !rule.actions.every((action) => typeof action === 'string')) problems.push(`${at}.actions: not a list of strings`);
  return problems;
}

/** Why `Policy.model_validate(value)` of the Python SDK would raise; empty when it parses. */
export function pythonPolicyProblems(value: unknown, at = 'policy'): Problems {
  if (!isObject(value)) return [`${at}: not an object`];
  const problems = unknownFields(value, ['version', 'name', 'description', 'rules', 'default_effect'], at);
  if (value.version !== undefined && typeof value.version !== 'string') problems.push(`${at}.version: not a string`);
  if (typeof value.name !== 'string') problems.push(`${at}.name: not a string`);
  if (!isOptionalString(value.description)) problems.push(`${at}.description: not a string or null`);
  if (value.default_effect !== undefined && !EFFECTS.includes(value.default_effect as string)) problems.push(`${at}.default_effect: not a PolicyEffect`);
  if (!Array.isArray(value.rules)) problems.push(`${at}.rules: not a list`);
  else value.rules.forEach((rule, index) => problems.push(...ruleProblems(rule, `${at}.rules.${index}`)));
  return problems;
}

/** Why `EntityInDb.model_validate(value)` would raise (the TypeScript SDK's EntityInDb is the same shape). */
export function pythonEntityProblems(value: unknown, at = 'entity'): Problems {
  if (!isObject(value)) return [`${at}: not an object`];
  const problems: Problems = [];
  if (typeof value.uri !== 'string') problems.push(`${at}.uri: not a string`);
  if (!ENTITY_TYPES.includes(value.type as string)) problems.push(`${at}.type: not an EntityType`);
  if (!isIsoUtc(value.registered_at)) problems.push(`${at}.registered_at: not an ISO UTC datetime`);
  if (!Array.isArray(value.attributes)) return [...problems, `${at}.attributes: not a list`];
  const keys = new Set<string>();
  value.attributes.forEach((attribute: unknown, index) => {
    const where = `${at}.attributes.${index}`;
    if (!isObject(attribute)) return problems.push(`${where}: not an object`);
    if (typeof attribute.key !== 'string') problems.push(`${where}.key: not a string`);
    else if (keys.has(attribute.key)) problems.push(`${where}.key: duplicate attribute key '${attribute.key}'`);
    else keys.add(attribute.key);
    if (!('value' in attribute)) problems.push(`${where}.value: missing`);
    for (const time of ['updated_at', 'registered_at']) if (!isIsoUtc(attribute[time])) problems.push(`${where}.${time}: not an ISO UTC datetime`);
  });
  return problems;
}

/** Why `CheckResponse.model_validate(value)` would raise (reason optional, as in the TypeScript SDK). */
export function pythonCheckResponseProblems(value: unknown, at = 'answer'): Problems {
  if (!isObject(value)) return [`${at}: not an object`];
  const problems: Problems = [];
  if (typeof value.allowed !== 'boolean') problems.push(`${at}.allowed: not a boolean`);
  if (!isOptionalString(value.reason)) problems.push(`${at}.reason: not a string or null`);
  return problems;
}

type Attributes = Record<string, unknown>;

/** `CheckRequest(...).model_dump()` as the Python SDK's check, bulk_check and create_simple_policy send it. */
export function pythonCheckRequest(
  principal: { uri?: string; attributes?: Attributes },
  resource: { uri?: string; attributes?: Attributes },
  action = 'access',
) {
  return {
    principal: { uri: principal.uri ?? null, attributes: principal.attributes ?? {}, type: 'principal' },
    resource: { uri: resource.uri ?? null, attributes: resource.attributes ?? {}, type: 'resource' },
    action,
  };
}

/** The TypeScript SDK's check body: `uri` left out when not given, attributes `{}` by default. */
export function typescriptCheckRequest(
  principal: { uri?: string; attributes?: Attributes },
  resource: { uri?: string; attributes?: Attributes },
  action = 'access',
) {
  return JSON.parse(
    JSON.stringify({
      principal: { uri: principal.uri, attributes: principal.attributes ?? {}, type: 'principal' },
      resource: { uri: resource.uri, attributes: resource.attributes ?? {}, type: 'resource' },
      action,
    }),
  );
}

/** `EntityCreate(...).model_dump()`: the SDK turns the attribute dict into a list of key/value pairs. */
export const pythonEntityCreate = (uri: string, type: 'principal' | 'resource', attributes: Attributes) => ({
  uri,
  attributes: Object.entries(attributes).map(([key, value]) => ({ key, value })),
  type,
});

/** `EntityUpdate(...).model_dump()`: as EntityCreate, with `type` null. */
export const pythonEntityUpdate = (uri: string, attributes: Attributes) => ({
  uri,
  attributes: Object.entries(attributes).map(([key, value]) => ({ key, value })),
  type: null,
});

interface PolicyInput {
  name: string;
  description?: string;
  default_effect?: string;
  rules: { name: string; description?: string; effect: string; principal_conditions?: unknown[]; resource_conditions?: unknown[]; actions: string[] }[];
}

/** `Policy(...).model_dump()` as create_policy (and the MCP tool's push) sends it: every field, nulls included. */
export const pythonPolicy = (policy: PolicyInput) => ({
  version: '1.0',
  name: policy.name,
  description: policy.description ?? null,
  rules: policy.rules.map((rule) => ({
    name: rule.name,
    description: rule.description ?? null,
    effect: rule.effect,
    principal_conditions: rule.principal_conditions ?? [],
    resource_conditions: rule.resource_conditions ?? [],
    actions: rule.actions,
  })),
  default_effect: policy.default_effect ?? 'deny',
});
