import type { FromSchema } from 'json-schema-to-ts';
import { anyJsonValueSchema } from './json.js';
import { explanationSchema } from './check.js';

/**
 * The OpenID AuthZEN Authorization API 1.0 bodies (docs/authzen.md). Unknown fields are accepted and
 * ignored everywhere, as that specification requires of a receiver; what it requires is required here.
 */

/** Attributes of a subject, resource or action, or a request's context: an object of non-empty keys. */
const propertiesSchema = {
  type: 'object',
  propertyNames: { minLength: 1 },
  additionalProperties: anyJsonValueSchema,
} as const;

function entitySchema(what: 'subject' | 'resource') {
  return {
    type: 'object',
    description: `The ${what}: the registered entity whose uri is \`<type>:<id>\`, with \`properties\` as supplied attributes (merged as in /check).`,
    properties: { type: { type: 'string' }, id: { type: 'string' }, properties: propertiesSchema },
    required: ['type', 'id'],
  } as const;
}

export const authzenSubjectSchema = entitySchema('subject');
export const authzenResourceSchema = entitySchema('resource');
export const authzenActionSchema = {
  type: 'object',
  description: 'The action: `name` is the action checked, `properties` its attributes (which `action_conditions` read).',
  properties: { name: { type: 'string' }, properties: propertiesSchema },
  required: ['name'],
} as const;
export const authzenContextSchema = { ...propertiesSchema, description: 'The environment of the request: the check\'s context (which `context_conditions` read).' } as const;

export const authzenEvaluationSchema = {
  type: 'object',
  properties: {
    subject: authzenSubjectSchema,
    action: authzenActionSchema,
    resource: authzenResourceSchema,
    context: authzenContextSchema,
  },
  required: ['subject', 'action', 'resource'],
} as const;
export type AuthzenEvaluation = FromSchema<typeof authzenEvaluationSchema>;

export const EVALUATIONS_SEMANTICS = ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'] as const;
export type EvaluationsSemantic = (typeof EVALUATIONS_SEMANTICS)[number];

/** One item of `evaluations`: any key it lacks is taken from the top level of the request. */
const evaluationItemSchema = { ...authzenEvaluationSchema, required: [] } as const;

export const authzenEvaluationsSchema = {
  type: 'object',
  properties: {
    ...evaluationItemSchema.properties,
    evaluations: { type: 'array', items: evaluationItemSchema },
    options: {
      type: 'object',
      properties: {
        evaluations_semantic: { type: 'string', enum: EVALUATIONS_SEMANTICS, description: 'Defaults to `execute_all`.' },
      },
    },
  },
} as const;
export type AuthzenEvaluations = FromSchema<typeof authzenEvaluationsSchema>;
export type AuthzenEvaluationItem = FromSchema<typeof evaluationItemSchema>;

/** A decision as AuthZEN answers it: `context` only when reasons are asked for, or for an item that could not be decided. */
export const authzenDecisionSchema = {
  type: 'object',
  properties: {
    decision: { type: 'boolean' },
    context: {
      type: 'object',
      description:
        'With `?explain=true`: `reason` (the sentence /check answers) and `explanation`. An evaluation that could not be decided: `error` (`status`, `message`).',
      properties: {
        // In the order the specification's example of deny_on_first_deny writes them.
        code: { type: 'string' },
        reason: { type: 'string' },
        explanation: explanationSchema,
        error: { type: 'object', properties: { status: { type: 'integer' }, message: { type: 'string' } }, required: ['status', 'message'] },
      },
    },
  },
  required: ['decision'],
  additionalProperties: false,
} as const;
/** Written by hand: the schema's context types the explanation loosely, and the engine's Explanation is exact. */
export interface AuthzenDecision {
  decision: boolean;
  context?: Readonly<Record<string, unknown>>;
}

export const authzenEvaluationsResponseSchema = {
  type: 'object',
  description: '`evaluations` in request order; `decision` alone when the request had no `evaluations`.',
  properties: { decision: { type: 'boolean' }, context: authzenDecisionSchema.properties.context, evaluations: { type: 'array', items: authzenDecisionSchema } },
  additionalProperties: false,
} as const;

/** The query string of the AuthZEN decision routes. */
export const authzenQuerySchema = {
  type: 'object',
  properties: {
    explain: { type: 'boolean', default: false, description: 'Add `reason` and `explanation` to each decision\'s `context`.' },
  },
} as const;

/** A search request's `page`: where to go on (`token`, from the previous answer's `next_token`) and how many results at most. */
const pageRequestSchema = {
  type: 'object',
  properties: { token: { type: 'string' }, limit: { type: 'integer', minimum: 1, description: 'At least 1: a page of none would never advance.' } },
} as const;

/** The searched-for side: a `type`, its `id` ignored. */
function searchedSchema(what: 'subject' | 'resource') {
  return { ...entitySchema(what), required: ['type'], description: `The ${what}s searched for: those of this \`type\` (an \`id\` is ignored).` } as const;
}

export const authzenSubjectSearchSchema = {
  type: 'object',
  properties: { subject: searchedSchema('subject'), action: authzenActionSchema, resource: authzenResourceSchema, context: authzenContextSchema, page: pageRequestSchema },
  required: ['subject', 'action', 'resource'],
} as const;
export type AuthzenSubjectSearch = FromSchema<typeof authzenSubjectSearchSchema>;

export const authzenResourceSearchSchema = {
  type: 'object',
  properties: { subject: authzenSubjectSchema, action: authzenActionSchema, resource: searchedSchema('resource'), context: authzenContextSchema, page: pageRequestSchema },
  required: ['subject', 'action', 'resource'],
} as const;
export type AuthzenResourceSearch = FromSchema<typeof authzenResourceSearchSchema>;

export const authzenActionSearchSchema = {
  type: 'object',
  properties: { subject: authzenSubjectSchema, resource: authzenResourceSchema, context: authzenContextSchema, page: pageRequestSchema },
  required: ['subject', 'resource'],
} as const;
export type AuthzenActionSearch = FromSchema<typeof authzenActionSearchSchema>;

export const authzenSearchResponseSchema = {
  type: 'object',
  properties: {
    page: {
      type: 'object',
      properties: {
        next_token: { type: 'string' },
        count: { type: 'integer' },
        total: { type: 'integer', description: 'Only when every result is in this answer (and always in an action search).' },
      },
      required: ['next_token', 'count'],
    },
    results: {
      type: 'array',
      items: { type: 'object', properties: { type: { type: 'string' }, id: { type: 'string' }, name: { type: 'string' } } },
    },
  },
  required: ['page', 'results'],
  additionalProperties: false,
} as const;

/** Where each AuthZEN endpoint is served, by its name in the metadata document. */
export const AUTHZEN_ENDPOINTS = {
  access_evaluation_endpoint: '/access/v1/evaluation',
  access_evaluations_endpoint: '/access/v1/evaluations',
  search_subject_endpoint: '/access/v1/search/subject',
  search_action_endpoint: '/access/v1/search/action',
  search_resource_endpoint: '/access/v1/search/resource',
} as const;

export const AUTHZEN_METADATA_PATH = '/.well-known/authzen-configuration';

/** The metadata document: where this decision point and each of its endpoints is. */
export const authzenMetadataSchema = {
  type: 'object',
  properties: {
    policy_decision_point: { type: 'string' },
    ...Object.fromEntries(Object.keys(AUTHZEN_ENDPOINTS).map((name) => [name, { type: 'string' }])),
  },
  required: ['policy_decision_point', ...Object.keys(AUTHZEN_ENDPOINTS)],
} as const;
