import { PLAIN, type OperatorDefinition, type Relation } from './definition.js';

// Presence: `exists`, `not_exists`. Any value there (null included) is present; a missing path
// holds only for not_exists.

const noValue = (value: unknown) => (value === undefined ? undefined : "takes no value: leave 'value' out");
/** Presence takes no value, so never a value read from the request (validation refuses `value_from` with it). */
const neverRelated: Relation = () => false;

const PRESENCE = { ...PLAIN, checkValue: noValue, relate: neverRelated, refusesValueFrom: "leave 'value_from' out", operandTypes: 'any', mongodb: 'exact' } as const;

export const exists: OperatorDefinition = { ...PRESENCE, build: () => () => true };
export const notExists: OperatorDefinition = { ...PRESENCE, build: () => () => false, holdsWhenMissing: true };
