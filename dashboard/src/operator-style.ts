/**
 * The operators the editor offers: one spelling each, as the server spells them in its answers
 * (`--operator-style`, which GET /admin/whoami reports). Both spellings mean the same to the server.
 */
import { OPERATORS } from '../../src/schemas/policy.js';

export type OperatorStyle = 'spec' | 'eunomia';

/** Spellings that mean the same as another: Eunomia's names and the symbols of the orderings. */
const SYNONYMS: readonly string[] = ['equals', 'not_equals', '>', '>=', '<', '<='];
const SPEC_OPERATORS: string[] = OPERATORS.filter((operator) => !SYNONYMS.includes(operator));
/** Eunomia's names for the symbols among them (its Python SDK reads no symbol). */
const EUNOMIA_NAMES: Record<string, string> = { '==': 'equals', '!=': 'not_equals' };

export function operatorsIn(style: OperatorStyle): string[] {
  return style === 'eunomia' ? SPEC_OPERATORS.map((operator) => EUNOMIA_NAMES[operator] ?? operator) : SPEC_OPERATORS;
}

/** The choices for a condition holding `current`: the style's, and `current` too when it is stored with another spelling. */
export function operatorChoices(style: OperatorStyle, current: string): string[] {
  const choices = operatorsIn(style);
  return current === '' || choices.includes(current) ? choices : [...choices, current];
}
