import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { FromSchema } from 'json-schema-to-ts';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import {
  bulkCheckQuerySchema,
  checkQuerySchema,
  checkRequestListSchema,
  checkRequestSchema,
  checkResponseListSchema,
  checkResponseSchema,
} from '../schemas/check.js';
import { isValidCheck } from '../requests/check-shape.js';
import type { RoutesOptions } from './context.js';
import { ERROR_RESPONSES } from './responses.js';
import { RequestValidationError } from '../errors.js';
import { MIN_REVISION_DOC } from './min-revision.js';
import { acceptJsonBytes } from './json-body.js';
import { bodyHandCheckedFirst, lazyValidator } from './schema-compilers.js';
import { answerDecided, NAMES_ITS_REVISION } from './revision.js';
import { onceMayExplain } from './admin-auth.js';
import { decisionJson, decisionsJson } from '../engine/index.js';
import type { DecidedBulk } from '../services/bulk-checks.js';
import { echoingRequestId, originOf } from './request-ids.js';
import { traceItemsOf } from './tracing.js';

/** The public check interface: `POST /check` and `POST /check/bulk`. No authentication. */
export const checkRoutes: FastifyPluginAsync<RoutesOptions> = async (fastify, { context }) => {
  const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
  const { checks, config, revision, explainGuard } = context;
  // The request id echoed as AuthZEN's routes echo it: the decision log names it in each line.
  const onRequest = echoingRequestId(context.minRevisionCheck);

  app.post('/check', {
    onRequest,
    config: NAMES_ITS_REVISION,
    validatorCompiler: bodyHandCheckedFirst((body) => isValidCheck(body, config)),
    schema: {
      tags: ['checks'],
      summary: 'Decide one check',
      description:
        'Principal and resource each by registered `uri`, supplied `attributes`, or both (merged). Nested or flat form. ' +
        MIN_REVISION_DOC,
      querystring: checkQuerySchema,
      body: checkRequestSchema,
      response: { 200: checkResponseSchema, ...ERROR_RESPONSES },
    },
    handler: (request, reply) => {
      // An explained answer is serialized; any other is the text its decision was built with.
      if (request.query.explain) return onceMayExplain(explainGuard, request, reply, () => answerDecided(reply, revision, checks.check(request.body, true, originOf(request))));
      return answerDecided(reply, revision, checks.check(request.body, false, originOf(request)), decisionJson);
    },
  });

  await app.register(async (bulkScope) => {
    // The bulk body stays bytes here: a worker decodes and reads it, or the front does (see BulkChecks).
    acceptJsonBytes(bulkScope, (bytes) => bytes);
    const { bulks } = context;
    const answered = (reply: FastifyReply, explain: boolean) => (decided: DecidedBulk) => {
      if ('json' in decided) return answerDecided(reply, revision, decided.json, (json) => json);
      return explain ? answerDecided(reply, revision, decided.decisions) : answerDecided(reply, revision, decided.decisions, decisionsJson);
    };

    bulkScope.post('/check/bulk', {
      onRequest,
      config: NAMES_ITS_REVISION,
      schema: {
        tags: ['checks'],
        summary: 'Decide many checks in one call',
        description: `A list of check requests (either form); the answers come back in the same order. At most ${config.bulkCheckMaxRequests} per call. ${MIN_REVISION_DOC}`,
        querystring: bulkCheckQuerySchema,
        body: checkRequestListSchema,
        response: { 200: checkResponseListSchema, ...ERROR_RESPONSES },
      },
      // The schema documents the body; BulkChecks validates it, wherever it is read.
      validatorCompiler: (route) => (route.httpPart === 'querystring' ? lazyValidator(route) : () => true),
      handler: async (request, reply) => {
        const bytes = request.body as Buffer | undefined;
        // No body at all (no content type either): as /check answers it.
        if (bytes === undefined) throw new RequestValidationError([{ loc: ['body'], msg: 'must be of type array', type: 'type_error' }]);
        const { explain, conflicts, trace_items: traceItems } = request.query as FromSchema<typeof bulkCheckQuerySchema>;
        if (explain) await explainGuard?.(request, reply);
        if (traceItems) traceItemsOf(request);
        const decided = bulks.decide(bytes, { explain, refuseConflicts: conflicts === 'refuse' }, originOf(request));
        return decided instanceof Promise ? decided.then(answered(reply, explain)) : answered(reply, explain)(decided);
      },
    });
  });
};
