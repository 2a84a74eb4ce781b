// What the client sends and reads, as the server's own JSON schemas define it: types derived from
// them (json-schema-to-ts), never written again here. Type-only imports: nothing of the server runs
// in the client.
import type { FromSchema } from 'json-schema-to-ts';
import type { CheckRequest, CheckResponse } from '../../../src/schemas/check.js';
import type { PlanRequest, PlanResponse } from '../../../src/schemas/plan.js';
import type { AuthzenDecision, AuthzenEvaluation, AuthzenEvaluations, authzenEvaluationsResponseSchema } from '../../../src/schemas/authzen.js';
import type { EntityCreate, EntityUpdate, entitySchema } from '../../../src/schemas/entity.js';
import type { validationIssueSchema } from '../../../src/schemas/errors.js';

export type { CheckRequest, PlanRequest, PlanResponse, AuthzenDecision, AuthzenEvaluation, AuthzenEvaluations, EntityCreate, EntityUpdate };
/** A decision: `allowed`, the `reason`, and `explain` when it was asked for. */
export type Decision = CheckResponse;
export type AuthzenEvaluationsResponse = FromSchema<typeof authzenEvaluationsResponseSchema>;
export type Entity = FromSchema<typeof entitySchema>;
/** One item of a 422's `detail`: where (`loc`), what (`msg`), and its kind. */
export type ValidationIssue = FromSchema<typeof validationIssueSchema>;
