/**
 * A policy as the editor holds it: condition values and actions as the operator types them. Converts
 * to and from the policy JSON of the admin API, with a message per field that cannot be converted.
 */
import type { FromSchema } from 'json-schema-to-ts';
import type { AnsweredPolicy, Condition, ConditionGroup, ConditionSetReference, policySchema } from '../../src/schemas/policy.js';
export { EFFECTS } from '../../src/schemas/policy.js';
import { parseJsonValue } from './json-text.js';

/** Operators that test only whether the attribute is there: their conditions have no value. */
export const takesNoValue = (operator: string) => operator === 'exists' || operator === 'not_exists';
/** `within` keeps its span as the value beside the reference that reads its anchor. */
export const takesValueWithReference = (operator: string) => operator === 'within';

export const SIDES = ['principal_conditions', 'resource_conditions', 'action_conditions', 'context_conditions'] as const;
export type Side = (typeof SIDES)[number];
/** The lists a policy written before relations has, always present; the others only when they hold a condition. */
const ALWAYS_SENT: readonly Side[] = ['principal_conditions', 'resource_conditions'];

/** What a condition compares with: a value written in it, or another attribute of the check (`value_from`). */
export const COMPARED_WITH = ['value', 'another attribute'] as const;

/** A policy as the admin API answers it. */
export type Policy = AnsweredPolicy;

/**
 * `T` with each choice among listed strings widened to any string: a form holds what was picked or typed,
 * and the server checks it (an operator it spells otherwise, say, is refused with a message by the field).
 */
type AsTyped<T> = T extends string ? string : T extends readonly (infer Item)[] ? AsTyped<Item>[] : T extends object ? { [K in keyof T]: AsTyped<T[K]> } : T;

/** A policy as the admin API takes it, fields with defaults optional: JSON typed into the editor is read as one. */
export type SentPolicy = AsTyped<FromSchema<typeof policySchema, { keepDefaultedPropertiesOptional: true }>>;
/** A condition as sent, or a group (`any_of`, `none_of`) or a reference to a condition set (`set`), which the form holds as JSON text. */
type SentCondition = AsTyped<Condition> | ConditionGroup | ConditionSetReference;

/** Typed JSON may hold anything where a condition should be: only an object with `any_of`, `none_of` or `set` is taken for a group or a reference. */
const isHeldAsJson = (condition: SentCondition): condition is ConditionGroup | ConditionSetReference =>
  typeof condition === 'object' && condition !== null && ('any_of' in condition || 'none_of' in condition || 'set' in condition);

/** A policy as the form sends it: every field filled but the version, left to the server's default. */
type FormPolicy = AsTyped<Omit<Policy, 'version'>>;
type FormRule = FormPolicy['rules'][number];
type FormCondition = FormRule['principal_conditions'][number];

export interface ConditionDraft {
  /** A group of alternatives (`any_of`, `none_of`) as JSON text, which the form shows as it is; the other fields are then unused. */
  group?: string;
  path: string;
  operator: string;
  comparedWith: (typeof COMPARED_WITH)[number];
  /** JSON text. */
  value: string;
  /** A reference such as `principal.attributes.email`. */
  valueFrom: string;
}

export type RuleDraft = { name: string; description: string; effect: string; /** Comma-separated. */ actions: string } & Record<Side, ConditionDraft[]>;

export interface PolicyDraft {
  name: string;
  description: string;
  default_effect: string;
  /** Comma-separated; empty for a policy that speaks for every resource. */
  resource_types: string;
  /** The policy's condition sets as JSON text; empty for none. */
  condition_sets: string;
  rules: RuleDraft[];
}

/** `operator`: how the server spells equality (see operator-style.ts). */
export const emptyCondition = (operator = '=='): ConditionDraft => ({ path: 'attributes.', operator, comparedWith: 'value', value: '', valueFrom: '' });
export const emptyRule = (): RuleDraft => ({
  name: '',
  description: '',
  effect: 'allow',
  // No blank condition to fill in or remove: a new rule holds for any principal and resource until conditions are added.
  principal_conditions: [],
  resource_conditions: [],
  action_conditions: [],
  context_conditions: [],
  actions: '',
});
export const emptyPolicy = (): PolicyDraft => ({ name: '', description: '', default_effect: 'deny', resource_types: '', condition_sets: '', rules: [emptyRule()] });

export function draftFromPolicy(policy: SentPolicy): PolicyDraft {
  const conditions = (list: unknown[] | undefined): ConditionDraft[] =>
    ((list ?? []) as SentCondition[]).map((condition) =>
      isHeldAsJson(condition)
        ? { ...emptyCondition(), group: JSON.stringify(condition, null, 2) }
        : {
            path: condition.path,
            operator: condition.operator,
            comparedWith: condition.value_from === undefined ? 'value' : 'another attribute',
            value: condition.value === undefined ? '' : JSON.stringify(condition.value),
            valueFrom: condition.value_from ?? '',
          },
    );
  return {
    name: policy.name,
    description: policy.description ?? '',
    default_effect: policy.default_effect ?? 'deny',
    resource_types: (policy.resource_types ?? []).join(', '),
    condition_sets: policy.condition_sets === undefined ? '' : JSON.stringify(policy.condition_sets, null, 2),
    rules: (policy.rules ?? []).map((rule) => ({
      name: rule.name,
      description: rule.description ?? '',
      effect: rule.effect,
      principal_conditions: conditions(rule.principal_conditions),
      resource_conditions: conditions(rule.resource_conditions),
      action_conditions: conditions(rule.action_conditions),
      context_conditions: conditions(rule.context_conditions),
      actions: (rule.actions ?? []).join(', '),
    })),
  };
}

/** The items of a comma-separated field, blanks dropped. */
const commaSeparated = (text: string) =>
  text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');

/** An empty description field is no description. */
const descriptionOf = (text: string) => (text.trim() === '' ? null : text);

export type Converted = { ok: true; policy: FormPolicy } | { ok: false; errors: Record<string, string> };

export function policyFromDraft(draft: PolicyDraft): Converted {
  const errors: Record<string, string> = {};
  const rules = draft.rules.map((rule, ruleIndex) => {
    const conditions = (side: Side) =>
      rule[side].map((condition, index): FormCondition => {
        if (condition.group !== undefined) {
          const parsed = parseJsonValue(condition.group);
          if (!parsed.ok) errors[`rules.${ruleIndex}.${side}.${index}`] = parsed.message;
          return (parsed.ok ? parsed.value : {}) as FormCondition;
        }
        if (takesNoValue(condition.operator)) return { path: condition.path, operator: condition.operator };
        const reference = condition.comparedWith === 'another attribute' ? { value_from: condition.valueFrom } : {};
        if (condition.comparedWith === 'another attribute' && !takesValueWithReference(condition.operator)) return { path: condition.path, operator: condition.operator, ...reference };
        const parsed = parseJsonValue(condition.value);
        if (!parsed.ok) errors[`rules.${ruleIndex}.${side}.${index}.value`] = parsed.message;
        return { path: condition.path, operator: condition.operator, value: parsed.ok ? parsed.value : null, ...reference };
      });
    const lists = Object.fromEntries(SIDES.flatMap((side) => (ALWAYS_SENT.includes(side) || rule[side].length > 0 ? [[side, conditions(side)]] : [])));
    return {
      name: rule.name,
      description: descriptionOf(rule.description),
      effect: rule.effect,
      ...(lists as Pick<FormRule, 'principal_conditions' | 'resource_conditions' | 'action_conditions' | 'context_conditions'>),
      actions: commaSeparated(rule.actions),
    };
  });
  const types = commaSeparated(draft.resource_types);
  const scope = types.length === 0 ? {} : { resource_types: types };
  let sets = {};
  if (draft.condition_sets.trim() !== '') {
    const parsed = parseJsonValue(draft.condition_sets);
    if (parsed.ok) sets = { condition_sets: parsed.value as FormPolicy['condition_sets'] };
    else errors.condition_sets = parsed.message;
  }
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  return { ok: true, policy: { name: draft.name, description: descriptionOf(draft.description), ...scope, ...sets, rules, default_effect: draft.default_effect } };
}

/** The keys of every field the editor shows for `draft`, for placing server messages. */
export function draftFieldKeys(draft: PolicyDraft): string[] {
  return [
    'name',
    'description',
    'default_effect',
    'resource_types',
    'condition_sets',
    'rules',
    ...draft.rules.flatMap((rule, ruleIndex) => {
      const at = `rules.${ruleIndex}`;
      return [
        at,
        `${at}.name`,
        `${at}.description`,
        `${at}.effect`,
        `${at}.actions`,
        ...SIDES.flatMap((side) => [
          `${at}.${side}`,
          ...rule[side].flatMap((_, index) => [`${at}.${side}.${index}`, ...['path', 'operator', 'value', 'value_from'].map((field) => `${at}.${side}.${index}.${field}`)]),
        ]),
      ];
    }),
  ];
}

/** Case-insensitive search over a policy's name, description, rule names and descriptions, and actions. */
export function policyMatches(policy: SentPolicy, search: string): boolean {
  const needle = search.trim().toLowerCase();
  if (needle === '') return true;
  const haystack = [policy.name, policy.description ?? '', ...policy.rules.flatMap((rule) => [rule.name, rule.description ?? '', ...rule.actions])];
  return haystack.some((text) => text.toLowerCase().includes(needle));
}
