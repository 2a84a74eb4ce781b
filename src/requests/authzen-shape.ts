/**
 * A hand-written reading of authzenEvaluationSchema (src/schemas/authzen.ts): true exactly when Ajv
 * would accept the parsed body (test/requests/authzen-shape.test.ts compares them on generated
 * bodies). Unknown fields pass, as the specification requires. The body's limits were checked when
 * it was parsed.
 */
export function isValidEvaluation(body: unknown): boolean {
  if (!isObject(body) || !isEntity(body.subject) || !isEntity(body.resource) || !isProperties(body.context)) return false;
  const action = body.action;
  return isObject(action) && typeof action.name === 'string' && isProperties(action.properties);
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A subject or resource: `type` and `id` strings, and perhaps properties. */
const isEntity = (entity: unknown): boolean => isObject(entity) && typeof entity.type === 'string' && typeof entity.id === 'string' && isProperties(entity.properties);

/** Absent, or an object of non-empty keys (its values may be any JSON). */
function isProperties(properties: unknown): boolean {
  if (properties === undefined) return true;
  if (!isObject(properties)) return false;
  // A parsed JSON object inherits no enumerable keys, so for-in visits its own keys (`__proto__` too).
  for (const key in properties) if (key === '') return false;
  return true;
}
