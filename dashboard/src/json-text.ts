/** Values typed as JSON text in form fields: `"it"` is a string, `3` a number, `["a","b"]` a list. */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

export const JSON_HINT = 'Not valid JSON: put text in double quotes ("it"); numbers, true, false, null, lists and objects as in JSON';

export function parseJsonValue(text: string): Parsed<JsonValue> {
  try {
    return { ok: true, value: JSON.parse(text) as JsonValue };
  } catch {
    return { ok: false, message: JSON_HINT };
  }
}

/** An attributes object such as `{"department": "it"}`; empty text is no attributes. */
export function parseAttributes(text: string): Parsed<Record<string, JsonValue> | undefined> {
  if (text.trim() === '') return { ok: true, value: undefined };
  const parsed = parseJsonValue(text);
  if (!parsed.ok) return parsed;
  const value = parsed.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, message: 'Attributes are a JSON object, such as {"department": "it"}' };
  }
  return { ok: true, value };
}
