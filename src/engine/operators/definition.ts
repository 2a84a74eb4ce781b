import type { Operator } from '../../schemas/policy.js';

/**
 * Tests an attribute's value (never MISSING: the caller handles absence) against a condition:
 * undefined when the condition cannot be evaluated on that value (an evaluation error: see
 * OperatorDefinition.undecidable), which the condition then counts as holding or not by the rule it
 * stands in (CompiledCondition.undecidableHolds).
 */
export type Predicate = (attribute: unknown) => boolean | undefined;

/**
 * Tests an attribute's value against a value read from the request (`value_from`; neither is
 * MISSING): false when the operator could not take that value as a condition's `value`, or, for an
 * operator whose tests may be undecidable, undefined.
 */
export type Relation = (attribute: unknown, value: unknown) => boolean | undefined;

/** A JSON Schema type name; `integer` as a schema declares it. */
export type JsonType = 'string' | 'number' | 'integer' | 'boolean' | 'null' | 'array' | 'object';

/**
 * Everything the server knows of one operator, in one place: a new operator is a definition in
 * the file of its family and an entry in operators/index.ts, and the compiler names any field it
 * still lacks. The fields that say "none" do so on purpose, with why where a reader would ask.
 */
export interface OperatorDefinition {
  /** Why a condition value (undefined when none is given) is unusable with this operator, or undefined when it is fine. */
  checkValue(value: unknown): string | undefined;
  build(value: unknown): Predicate;
  relate: Relation;
  /** Whether the condition holds where its path leads nowhere: only `not_exists` does. */
  holdsWhenMissing: boolean;
  /** Why the operator takes no `value_from`, or undefined when it takes one. */
  refusesValueFrom: string | undefined;
  /** For an operator whose value is relative to another value of the check, its anchor (see Anchored); undefined for the others. */
  anchored: Anchored | undefined;
  /**
   * Only for an operator whose tests may answer undefined (it cannot be evaluated on the value it
   * reads: a network operator on what is not an address, a pattern on what is not a string, a time
   * operator on what is not a date-time): why, for an explanation, given the value at the path and
   * the condition's value (or the value its reference read). Undefined for an operator always decided.
   */
  undecidable: ((attribute: unknown, value: unknown) => string) | undefined;
  /** The attribute types the operator can hold for, as a schema declares them ('any': every type); validate and schema checks refuse a condition that cannot hold. */
  operandTypes: readonly JsonType[] | 'any';
  /** The string formats it can hold for (an address for a range, a date-time for time), or 'any'. */
  operandFormats: readonly string[] | 'any';
  /** What of the condition's value an attribute's schema must allow: the value itself, each item of a list, or nothing (a bound, a pattern). */
  schemaChecksValue: 'whole' | 'items' | 'none';
  /** The operator that relates two values as this one does with them swapped (`gt` → `lt`), for a plan; undefined when a plan cannot swap them. */
  mirror: Operator | undefined;
  /** The MongoDB filter of a plan: 'exact' (mongodb-filter.ts translates it), or why there is none. */
  mongodb: 'exact' | { none: string };
}

/**
 * An operator whose `value` says how the path's value relates to an anchor (`within` a span of an
 * instant): the anchor is written in the value, or read by `value_from`, or a reference the operator
 * names. The condition then takes both `value` and `value_from`.
 */
export interface Anchored {
  /** The reference read when the value holds no anchor and the condition no `value_from`; undefined when the value holds one. */
  defaultReference(value: unknown): string | undefined;
  /** The relation of the path's value to the anchor read from the check, for a value without an anchor. */
  relation(value: unknown): Relation;
  /** The value with `anchor` written in it: what the condition says once the anchor is known (in a plan, an explanation). */
  pin(value: unknown, anchor: unknown): unknown;
  /** The value that relates the anchor to the path's value as `value` relates the path's value to the anchor. */
  mirror(value: unknown): unknown;
}

/** The fields most operators share: decided on every value, relative to nothing, a value from the request taken. */
export const PLAIN = {
  holdsWhenMissing: false,
  refusesValueFrom: undefined,
  anchored: undefined,
  undecidable: undefined,
  operandFormats: 'any',
  schemaChecksValue: 'none',
  mirror: undefined,
} as const satisfies Partial<OperatorDefinition>;

export const isNumber = (value: unknown): value is number => typeof value === 'number';
export const isString = (value: unknown): value is string => typeof value === 'string';

/** A value as an explanation quotes it: its JSON, cut short. */
export function quoted(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 60 ? `${json.slice(0, 60)}…` : json;
}

export const anyValue = (): undefined => undefined;
