import { OPERATORS, type Operator } from '../../schemas/policy.js';
import type { OperatorDefinition } from './definition.js';
import { equals, isIn, notEquals, notIn } from './equality.js';
import { contains, endsWith, notContains, startsWith } from './text.js';
import { greater, greaterOrEqual, less, lessOrEqual } from './numbers.js';
import { matches, notMatches } from './patterns.js';
import { inCidr, notInCidr } from './networks.js';
import { after, before, during, within } from './time.js';
import { exists, notExists } from './presence.js';

export type { Anchored, JsonType, OperatorDefinition, Predicate, Relation } from './definition.js';

/** Every wire operator, synonyms included (a synonym shares its definition), each defined in the file of its family. */
export const OPERATOR_DEFINITIONS: Readonly<Record<Operator, OperatorDefinition>> = {
  '==': equals,
  equals,
  '!=': notEquals,
  not_equals: notEquals,
  contains,
  not_contains: notContains,
  startswith: startsWith,
  endswith: endsWith,
  gt: greater,
  '>': greater,
  gte: greaterOrEqual,
  '>=': greaterOrEqual,
  lt: less,
  '<': less,
  lte: lessOrEqual,
  '<=': lessOrEqual,
  in: isIn,
  not_in: notIn,
  matches,
  not_matches: notMatches,
  in_cidr: inCidr,
  not_in_cidr: notInCidr,
  before,
  after,
  during,
  within,
  exists,
  not_exists: notExists,
};

/** Each operator's first spelling in OPERATORS (`equals` → `==`, `>` → `gt`): synonyms share one definition. */
export const CANONICAL_OPERATOR = Object.fromEntries(
  OPERATORS.map((operator) => [operator, OPERATORS.find((first) => OPERATOR_DEFINITIONS[first] === OPERATOR_DEFINITIONS[operator])!]),
) as Readonly<Record<Operator, Operator>>;

export const OPERATOR_STYLES = ['spec', 'eunomia'] as const;
/** How operators are spelled in answers: `spec` as stored, `eunomia` with the names Eunomia's clients parse. */
export type OperatorStyle = (typeof OPERATOR_STYLES)[number];

/** Eunomia's name for each symbolic spelling; its Python SDK refuses any policy holding a symbol. */
const EUNOMIA_NAMES: Partial<Record<Operator, Operator>> = { '==': 'equals', '!=': 'not_equals', '>': 'gt', '>=': 'gte', '<': 'lt', '<=': 'lte' };

/** `operator` as an answer in `style` spells it; both spellings mean the same to the engine. */
export function spellOperator(operator: Operator, style: OperatorStyle): Operator {
  return style === 'eunomia' ? (EUNOMIA_NAMES[operator] ?? operator) : operator;
}
