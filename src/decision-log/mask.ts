import { createHash } from 'node:crypto';

/** How a masked attribute's value is written: not at all, or as a digest of its JSON (which a guessable value does not hide). */
export type MaskMethod = 'omit' | 'hash';

/** The attributes whose values the log never writes as they are: by part of the check, then attribute name. */
export type DecisionLogMask = Partial<Record<'principal' | 'resource' | 'action' | 'context', Readonly<Record<string, MaskMethod>>>>;

const PARTS = ['principal', 'resource', 'action', 'context'] as const;

/** A masked value as shown: `[masked]`, or `sha256:` and the first 16 hex digits of the SHA-256 of its JSON. */
export function maskedValue(value: unknown, method: MaskMethod): string {
  if (method === 'omit') return '[masked]';
  return `sha256:${createHash('sha256').update(JSON.stringify(value) ?? 'null').digest('hex').slice(0, 16)}`;
}
const METHODS: readonly MaskMethod[] = ['omit', 'hash'];
/** Most attributes one mask may name. */
const MAX_MASKED = 200;

/**
 * `--decision-log-mask`: comma-separated `<part>.<attribute>` (the value never written) or
 * `<part>.<attribute>=hash` (written as a digest), the part one of principal, resource, action,
 * context. Throws an Error saying which entry is wrong.
 */
export function parseDecisionLogMask(text: string): DecisionLogMask {
  const mask: Partial<Record<(typeof PARTS)[number], Record<string, MaskMethod>>> = {};
  const entries = text.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  if (entries.length > MAX_MASKED) throw new Error(`names ${entries.length} attributes; at most ${MAX_MASKED}`);
  for (const entry of entries) {
    const [path, method = 'omit', ...extra] = entry.split('=');
    const dot = path!.indexOf('.');
    const part = path!.slice(0, dot) as (typeof PARTS)[number];
    const attribute = path!.slice(dot + 1);
    if (dot === -1 || !PARTS.includes(part) || attribute === '') {
      throw new Error(`'${entry}' is not <part>.<attribute>[=hash], the part one of ${PARTS.join(', ')}`);
    }
    if (extra.length > 0 || !METHODS.includes(method as MaskMethod)) throw new Error(`'${entry}': after '=' comes ${METHODS.join(' or ')}`);
    (mask[part] ??= Object.create(null) as Record<string, MaskMethod>)[attribute] = method as MaskMethod;
  }
  return mask;
}
