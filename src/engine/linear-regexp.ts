import type { RE2JS } from 're2js';
import { createRequire } from 'node:module';

/** Loaded where a pattern is first compiled: most processes compile none. */
const requireWhenUsed = createRequire(import.meta.url);

/** The longest regular expression taken, in characters: what compiling one costs grows with it. */
export const MAX_PATTERN_LENGTH = 1000;

/** A pattern the linear-time engine does not take: the message says why. */
export class PatternError extends Error {}

/** A compiled regular expression: `test` says whether it matches anywhere in a string, as RegExp.test does. */
export interface LinearRegExp {
  test(text: string): boolean;
  toString(): string;
}

/**
 * `pattern` compiled by RE2JS, a port of RE2, whose matching time grows linearly with the string
 * matched, whatever the pattern: a pattern that a backtracking engine (JavaScript's own) would take
 * exponential time over (`^(a|aa)+$`, `^(\w|\d)+$`) cannot stall the thread that runs it. RE2's syntax
 * is JavaScript's without backreferences and lookaround; such a pattern is a PatternError.
 */
export function linearRegExp(pattern: string): LinearRegExp {
  if (pattern.length > MAX_PATTERN_LENGTH) throw new PatternError(`is longer than ${MAX_PATTERN_LENGTH} characters`);
  const { RE2JS: Engine } = requireWhenUsed('re2js') as { RE2JS: typeof RE2JS };
  let compiled: RE2JS;
  try {
    compiled = Engine.compile(pattern);
  } catch (error) {
    throw new PatternError(`is not a regular expression the linear-time engine takes (RE2 syntax: no backreferences or lookaround): ${(error as Error).message}`);
  }
  const shown = `/${pattern}/`;
  return { test: (text) => compiled.test(text), toString: () => shown };
}
