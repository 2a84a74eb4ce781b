// What the Node client's src/wire.ts is generated from (`npm run client:wire`): the server's own wire
// schemas and constants, expanded into plain types and literals so that the package ships none of
// the server and needs no schema library at run time. Edit the schemas in src/schemas/, not wire.ts.
import type { FromSchema } from 'json-schema-to-ts';
import type { checkRequestSchema, checkResponseSchema } from '../../src/schemas/check.js';
import type { planRequestSchema, planResponseSchema } from '../../src/schemas/plan.js';
import type { authzenDecisionSchema, authzenEvaluationSchema, authzenEvaluationsResponseSchema, authzenEvaluationsSchema } from '../../src/schemas/authzen.js';
import type { entityCreateSchema, entitySchema, entityUpdateSchema } from '../../src/schemas/entity.js';
import type { validationIssueSchema } from '../../src/schemas/errors.js';
import type { changeLineSchema } from '../../src/schemas/wire.js';
import * as wire from '../../src/schemas/wire.js';

/** A check, in either form the server takes: nested (`principal`, `resource`) or flat (`principal_uri`, …). */
export type CheckRequest = FromSchema<typeof checkRequestSchema>;
/** A decision: `allowed`, the `reason`, and `explain` when it was asked for. */
export type Decision = FromSchema<typeof checkResponseSchema>;
/** `POST /plan`: which resources a principal may act on. */
export type PlanRequest = FromSchema<typeof planRequestSchema>;
export type PlanResponse = FromSchema<typeof planResponseSchema>;
/** An AuthZEN access evaluation (`POST /access/v1/evaluation`). */
export type AuthzenEvaluation = FromSchema<typeof authzenEvaluationSchema>;
export type AuthzenDecision = FromSchema<typeof authzenDecisionSchema>;
/** AuthZEN access evaluations (`POST /access/v1/evaluations`). */
export type AuthzenEvaluations = FromSchema<typeof authzenEvaluationsSchema>;
export type AuthzenEvaluationsResponse = FromSchema<typeof authzenEvaluationsResponseSchema>;
/** An entity to register: its `uri`, `type`, and attributes. */
export type EntityCreate = FromSchema<typeof entityCreateSchema>;
export type EntityUpdate = FromSchema<typeof entityUpdateSchema>;
/** A registered entity, as the server answers it. */
export type Entity = FromSchema<typeof entitySchema>;
/** One item of a 422's `detail`: where (`loc`), what (`msg`), and its kind. */
export type ValidationIssue = FromSchema<typeof validationIssueSchema>;
/** One line of the decision change feed (`GET /admin/changes`); a line with `at` alone is a heartbeat. */
export type ChangeLine = FromSchema<typeof changeLineSchema>;

export const API_KEY_HEADER = wire.API_KEY_HEADER;
export const REVISION_HEADER = wire.REVISION_HEADER;
export const MIN_REVISION_HEADER = wire.MIN_REVISION_HEADER;
export const REQUEST_ID_HEADER = wire.REQUEST_ID_HEADER;
export const HEARTBEAT_MILLIS = wire.HEARTBEAT_MILLIS;
