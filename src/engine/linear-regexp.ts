import type { RE2JS } from 're2js';
import { createRequire } from 'node:module';
import { estimatedProgramSize } from './pattern-size.js';

/** Loaded where a pattern is first compiled: most processes compile none. */
const requireWhenUsed = createRequire(import.meta.url);

/** The longest regular expression taken, in characters. */
export const MAX_PATTERN_LENGTH = 1000;
/**
 * The largest program a pattern may compile to, in RE2 instructions (counted repetitions multiplied
 * out): compiling costs time and memory in proportion to it, and so does matching, for every
 * character matched (some 3 ns per instruction and character, measured: bench/patterns.ts).
 */
export const MAX_PATTERN_PROGRAM = 256;
/**
 * The most a single match may cost, in instructions times characters (a few milliseconds where the
 * engine falls back from its automaton to simulating the program): a string longer than its
 * pattern's share of it cannot be matched (see LinearRegExp.test).
 */
export const MAX_MATCH_WORK = 1_000_000;
/**
 * Patterns kept compiled, by their text, so that a pattern checked as a policy is written is not
 * compiled again as the policy is loaded. Few: each may hold a matching cache of its own.
 */
const COMPILED_KEPT = 128;

/** A pattern the linear-time engine does not take: the message says why. */
export class PatternError extends Error {}

/** A compiled regular expression. */
export interface LinearRegExp {
  /**
   * Whether it matches anywhere in `text`, as RegExp.test does; undefined when `text` is longer than
   * `longestText`, which the pattern cannot be matched against within MAX_MATCH_WORK.
   */
  test(text: string): boolean | undefined;
  /** The longest text it matches against. */
  readonly longestText: number;
  toString(): string;
}

const compiled = new Map<string, LinearRegExp>();

/**
 * `pattern` compiled by RE2JS, a port of RE2, whose matching time grows linearly with the string
 * matched, whatever the pattern: a pattern that a backtracking engine (JavaScript's own) would take
 * exponential time over (`^(a|aa)+$`, `^(\w|\d)+$`) cannot stall the thread that runs it. Its time
 * also grows with the pattern's program, which is bounded (MAX_PATTERN_PROGRAM), and so is the work of
 * one match (MAX_MATCH_WORK). RE2's syntax is JavaScript's without backreferences and lookaround; such
 * a pattern, or one past the bounds, is a PatternError. Compiled once per text (the latest
 * COMPILED_KEPT are kept).
 */
export function linearRegExp(pattern: string): LinearRegExp {
  let regExp = compiled.get(pattern);
  if (regExp === undefined) {
    regExp = compile(pattern);
    if (compiled.size >= COMPILED_KEPT) compiled.delete(compiled.keys().next().value!);
    compiled.set(pattern, regExp);
  }
  return regExp;
}

const tooLarge = (size: number) =>
  new PatternError(`compiles to a program of about ${size} instructions (counted repetitions multiplied out), more than the ${MAX_PATTERN_PROGRAM} allowed: repeat less, or match a shorter part`);

function compile(pattern: string): LinearRegExp {
  if (pattern.length > MAX_PATTERN_LENGTH) throw new PatternError(`is longer than ${MAX_PATTERN_LENGTH} characters`);
  const estimated = estimatedProgramSize(pattern, MAX_PATTERN_PROGRAM);
  if (estimated > MAX_PATTERN_PROGRAM) throw tooLarge(estimated);
  const { RE2JS: Engine } = requireWhenUsed('re2js') as { RE2JS: typeof RE2JS };
  let engine: RE2JS;
  try {
    engine = Engine.compile(pattern);
  } catch (error) {
    throw new PatternError(`is not a regular expression the linear-time engine takes (RE2 syntax: no backreferences or lookaround): ${(error as Error).message}`);
  }
  const program = engine.programSize();
  if (program > MAX_PATTERN_PROGRAM) throw tooLarge(program);
  const longestText = Math.floor(MAX_MATCH_WORK / program);
  const shown = `/${pattern}/`;
  return { test: (text) => (text.length > longestText ? undefined : engine.test(text)), longestText, toString: () => shown };
}
