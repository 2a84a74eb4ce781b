/**
 * The server's own OpenAPI document (`GET /docs/json`) as the tests read it: a test that goes over
 * routes takes them from here, so that a route added later cannot be left out of it.
 */
export interface OpenApiDocument {
  paths: Record<
    string,
    Record<
      string,
      {
        description?: string;
        security?: unknown[];
        requestBody?: { content?: Record<string, { schema?: unknown }> };
        parameters?: { in: string; name: string; required?: boolean; schema?: unknown }[];
        responses?: Record<string, { content?: Record<string, unknown> }>;
      }
    >
  >;
}

/** One method on one route, `route` as the document spells it (`/admin/policies/{name}`). */
export interface Operation {
  method: string;
  route: string;
  description: string;
  /** The document says it takes the admin key. */
  secured: boolean;
  takesBody: boolean;
  /** The names of its query parameters, and of those it cannot do without. */
  query: string[];
  requiredQuery: string[];
  /** The JSON Schemas it declares for its JSON body, and for its query parameters by name. */
  bodySchema: unknown;
  querySchemas: Record<string, unknown>;
}

/**
 * Whether an operation answers with a stream that stays open (`application/x-ndjson`, the change
 * feed): a test that reads whole answers cannot ask it; its own tests do (test/http/changes.test.ts).
 */
export const streamsForever = (operation: NonNullable<OpenApiDocument['paths'][string][string]>) => operation.responses?.['200']?.content?.['application/x-ndjson'] !== undefined;

/** Every operation of the document, but those that answer with a stream that stays open (see streamsForever). */
export function operationsOf(document: OpenApiDocument): Operation[] {
  return Object.entries(document.paths).flatMap(([route, methods]) =>
    Object.entries(methods).filter(([, operation]) => !streamsForever(operation)).map(([method, operation]) => ({
      method: method.toUpperCase(),
      route,
      description: operation.description ?? '',
      secured: (operation.security ?? []).length > 0,
      takesBody: operation.requestBody !== undefined,
      query: (operation.parameters ?? []).filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name),
      requiredQuery: (operation.parameters ?? []).filter((parameter) => parameter.in === 'query' && parameter.required === true).map((parameter) => parameter.name),
      bodySchema: operation.requestBody?.content?.['application/json']?.schema,
      querySchemas: Object.fromEntries((operation.parameters ?? []).filter((parameter) => parameter.in === 'query').map((parameter) => [parameter.name, parameter.schema])),
    })),
  );
}

/** The earlier endpoint family's writes: they take the admin key as `/admin` routes do. */
export const EARLIER_FAMILY_WRITES = ['/create-policy', '/register-entity', '/update-entity', '/delete-entity'];

/** Whether `route` is one the admin key guards: every `/admin` route and the earlier family's writes. */
export const isAdminRoute = (route: string) => route.startsWith('/admin/') || EARLIER_FAMILY_WRITES.includes(route);

/** Values for the path and required query parameters of an example call, by parameter name. */
const EXAMPLE_VALUES: Record<string, string> = { name: 'p', uri: 'e', version: '1' };

/** A path that calls `operation`: its parameters filled in; throws naming a parameter no example value is known for. */
export function examplePath({ route, requiredQuery }: Operation, values: Record<string, string> = EXAMPLE_VALUES): string {
  const valueOf = (parameter: string) => {
    const value = values[parameter];
    if (value === undefined) throw new Error(`${route}: no example value for the parameter '${parameter}' (add one in test/helpers/openapi.ts)`);
    return encodeURIComponent(value);
  };
  const path = route.replace(/\{([^}]+)\}/g, (_, parameter: string) => valueOf(parameter));
  return requiredQuery.length === 0 ? path : `${path}?${requiredQuery.map((parameter) => `${parameter}=${valueOf(parameter)}`).join('&')}`;
}
