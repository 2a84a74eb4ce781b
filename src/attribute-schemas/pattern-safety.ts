import type { Root, Tokens } from 'ret';
import { requireWhenUsed } from '../schemas/validation.js';

/** Keywords whose values are data, not schemas: a `pattern` key inside them is not a regular expression. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples']);

type Tokenize = (pattern: string) => Root;

/**
 * Whether `pattern` repeats, a variable number of times, something that itself repeats a variable
 * number of times (`(a+)+`, `(\w*\s?)*`): the shape that lets a backtracking engine try exponentially
 * many ways to match a string that fails. Fixed counts and `?` are not variable enough to (`(\d{3})?`
 * passes). A pattern the tokenizer cannot read is left to Ajv, which refuses what is not a pattern.
 */
function nestsVariableRepetition(tokenize: Tokenize, pattern: string): boolean {
  let root: Root;
  try {
    root = tokenize(pattern);
  } catch {
    return false;
  }
  const pending: [Tokens, number][] = [[root, 0]];
  while (pending.length > 0) {
    const [token, depth] = pending.pop()!;
    if ('min' in token) {
      // A repetition: `+` and `*` have no maximum (Infinity).
      const inner = token.max > 1 && token.max !== token.min ? depth + 1 : depth;
      if (inner > 1) return true;
      pending.push([token.value, inner]);
    }
    if ('stack' in token) for (const child of token.stack ?? []) pending.push([child, depth]);
    if ('options' in token) for (const option of token.options ?? []) for (const child of option) pending.push([child, depth]);
  }
  return false;
}

/**
 * The first regular expression of `schema` (a `pattern`, or a key of `patternProperties`) that could
 * take exponential time on some values (see nestsVariableRepetition). Attribute schemas run their
 * patterns against the strings clients send, so one such pattern would let any client stall checks.
 */
export function unsafePattern(schema: unknown): string | undefined {
  const tokenize = requireWhenUsed('ret') as Tokenize;
  const unsafe = (pattern: string) => nestsVariableRepetition(tokenize, pattern);
  const pending: unknown[] = [schema];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value !== 'object' || value === null) continue;
    for (const [key, inner] of Object.entries(value)) {
      if (DATA_KEYWORDS.has(key)) continue;
      if (key === 'pattern' && typeof inner === 'string' && unsafe(inner)) return inner;
      if (key === 'patternProperties' && typeof inner === 'object' && inner !== null) {
        const found = Object.keys(inner).find(unsafe);
        if (found !== undefined) return found;
      }
      pending.push(inner);
    }
  }
  return undefined;
}
