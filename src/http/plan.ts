import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import { planRequestListSchema, planRequestSchema, planResponseListSchema, planResponseSchema } from '../schemas/plan.js';
import { bulkListError } from '../requests/bulk-request.js';
import type { RoutesOptions } from './context.js';
import { ERROR_RESPONSES } from './responses.js';
import { MIN_REVISION_DOC } from './min-revision.js';
import type { Planned } from '../services/plans.js';

/** The answers, or the JSON a worker wrote of them, sent as it is. */
function send<Answer>(reply: FastifyReply, planned: Planned<Answer>): Answer | FastifyReply {
  return 'json' in planned ? reply.type('application/json').send(planned.json) : planned.answer;
}

const tags = ['plans'];

/** "Which resources may this principal act on?": `POST /plan` and `POST /plan/bulk`. Public, like `/check`. */
export const planRoutes: FastifyPluginAsync<RoutesOptions> = async (fastify, { context }) => {
  const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
  const { plans, config } = context;
  const onRequest = context.minRevisionCheck;

  app.post('/plan', {
    onRequest,
    schema: {
      tags,
      summary: 'Which resources a principal may act on',
      description:
        'The principal as `/check` takes it (by `uri`, `attributes` or both, merged), an action, and optionally what is known of the resources. ' +
        'Answers whether the action is allowed for every resource, for none, or for those satisfying `condition`, also given as a MongoDB filter. ' +
        MIN_REVISION_DOC,
      body: planRequestSchema,
      response: { 200: planResponseSchema, ...ERROR_RESPONSES },
    },
    handler: async (request, reply) => send(reply, await plans.plan(request.body)),
  });

  app.post('/plan/bulk', {
    onRequest,
    schema: {
      tags,
      summary: 'Several plans in one call',
      description: `A list of plan requests; the answers come back in the same order. At most ${config.bulkCheckMaxRequests} per call. ${MIN_REVISION_DOC}`,
      body: planRequestListSchema,
      response: { 200: planResponseListSchema, ...ERROR_RESPONSES },
    },
    // The list's length is judged before its items, as /check/bulk does.
    preValidation: async (request) => {
      const error = bulkListError(request.body, config.bulkCheckMaxRequests);
      if (error !== undefined) throw error;
    },
    handler: async (request, reply) => send(reply, await plans.planMany(request.body)),
  });
};
