/** One line per side of a check request, for the bulk results table; both request forms are read. */

type Json = Record<string, unknown>;

function describe(uri: unknown, attributes: unknown): string {
  const parts: string[] = [];
  if (typeof uri === 'string' && uri !== '') parts.push(uri);
  if (attributes !== undefined && attributes !== null) parts.push(JSON.stringify(attributes));
  return parts.join(' ');
}

export function sideSummary(request: unknown, side: 'principal' | 'resource'): string {
  if (typeof request !== 'object' || request === null) return '';
  const flat = request as Json;
  const nested = flat[side];
  if (typeof nested === 'object' && nested !== null) return describe((nested as Json).uri, (nested as Json).attributes);
  return describe(flat[`${side}_uri`], flat[`${side}_attributes`]);
}

export function actionOf(request: unknown): string {
  const action = typeof request === 'object' && request !== null ? (request as Json).action : undefined;
  return typeof action === 'string' ? action : 'access';
}
