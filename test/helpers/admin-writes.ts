import { isAdminRoute } from './openapi.js';

/**
 * One successful call of every admin write route, in an order in which each succeeds on a fresh
 * server: the routes that audit and role tests go through. `route` is the OpenAPI path template.
 */
export interface AdminWrite {
  method: string;
  route: string;
  path: string;
  body?: unknown;
  /** The audit record's target. */
  target: string;
}

const ENTITIES = '/admin/fetchers/registry/entities';
const rules = (action: string) => [
  { name: 'r', effect: 'allow', principal_conditions: [{ path: 'attributes.team', operator: '==', value: 'ops' }], resource_conditions: [], actions: [action] },
];

export const ADMIN_WRITES: AdminWrite[] = [
  { method: 'POST', route: '/admin/policies', path: '/admin/policies', body: { name: 'p1', rules: rules('read') }, target: 'policy:p1' },
  {
    method: 'POST',
    route: '/admin/policies/simple',
    path: '/admin/policies/simple?name=s1',
    body: { principal: { attributes: { team: 'ops' } }, resource: { attributes: { kind: 'doc' } }, action: 'read' },
    target: 'policy:s1',
  },
  { method: 'PUT', route: '/admin/policies/{name}', path: '/admin/policies/p1', body: { name: 'p1', rules: rules('write') }, target: 'policy:p1' },
  { method: 'POST', route: '/admin/policies/{name}/restore', path: '/admin/policies/p1/restore?version=1', target: 'policy:p1' },
  { method: 'DELETE', route: '/admin/policies/{name}', path: '/admin/policies/s1', target: 'policy:s1' },
  { method: 'POST', route: '/admin/policies', path: '/admin/policies', body: { name: 'sh1', shadow: true, rules: rules('read') }, target: 'policy:sh1' },
  { method: 'POST', route: '/admin/policies/{name}/promote', path: '/admin/policies/sh1/promote', target: 'policy:sh1' },
  { method: 'POST', route: '/create-policy', path: '/create-policy', body: { name: 'p2', rules: rules('read') }, target: 'policy:p2' },
  { method: 'POST', route: ENTITIES, path: ENTITIES, body: { uri: 'user:1', attributes: { team: 'ops' } }, target: 'entity:user:1' },
  { method: 'PUT', route: `${ENTITIES}/{uri}`, path: `${ENTITIES}/user%3A1`, body: { uri: 'user:1', attributes: { team: 'dev' } }, target: 'entity:user:1' },
  { method: 'DELETE', route: `${ENTITIES}/{uri}`, path: `${ENTITIES}/user%3A1`, target: 'entity:user:1' },
  { method: 'POST', route: `${ENTITIES}/$bulk`, path: `${ENTITIES}/$bulk`, body: [{ uri: 'user:3', attributes: { team: 'ops' } }], target: 'entity:user:3' },
  { method: 'POST', route: '/register-entity', path: '/register-entity', body: { uri: 'user:2', attributes: { team: 'ops' } }, target: 'entity:user:2' },
  { method: 'POST', route: '/update-entity', path: '/update-entity', body: { uri: 'user:2', attributes: { team: 'dev' } }, target: 'entity:user:2' },
  { method: 'POST', route: '/delete-entity', path: '/delete-entity?uri=user:2', target: 'entity:user:2' },
  { method: 'PUT', route: '/admin/schemas', path: '/admin/schemas', body: { principal: { attributes: { type: 'object' } } }, target: 'schemas' },
  { method: 'DELETE', route: '/admin/schemas', path: '/admin/schemas', target: 'schemas' },
  { method: 'POST', route: '/admin/schemas/restore', path: '/admin/schemas/restore?version=1', target: 'schemas' },
];

/** Admin routes that take a body by POST but write nothing. */
const CHECKS_WITHOUT_WRITING = ['/admin/policies/validate', '/admin/check-at', '/admin/policies/impact'];

/** The OpenAPI document's routes that change data: every method but GET on admin routes (less those that only check), and the earlier family's writes. */
export function writeRoutesOf(openapi: { paths: Record<string, Record<string, unknown>> }): string[] {
  return Object.entries(openapi.paths).flatMap(([path, methods]) =>
    Object.keys(methods)
      .map((method) => method.toUpperCase())
      .filter((method) => method !== 'GET' && method !== 'HEAD' && !CHECKS_WITHOUT_WRITING.includes(path))
      .filter(() => isAdminRoute(path))
      .map((method) => `${method} ${path}`),
  );
}
