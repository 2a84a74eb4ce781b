import type { FastifyPluginAsync } from 'fastify';
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
import { bulkLimitsOf, compileBulkValidator, plainlyNamesToken, plainlyNamesUri, readBulkBody } from '../requests/bulk-request.js';
import { createAjv } from '../schemas/validation.js';
import { isValidCheck } from '../requests/check-shape.js';
import type { AppContext, RoutesOptions } from './context.js';
import { ERROR_RESPONSES } from './responses.js';
import { RequestValidationError } from '../errors.js';
import { MIN_REVISION_DOC } from './min-revision.js';
import { acceptJsonBytes } from './json-body.js';
import { bodyHandCheckedFirst, compiledOnFirstUse } from './schema-compilers.js';
import { answerDecided, NAMES_ITS_REVISION } from './revision.js';
import { onceMayExplain } from './admin-auth.js';
import { decisionJson, decisionsJson } from '../engine/index.js';
import type { MeasuredPlacement } from '../pool/measured-placement.js';
import type { BulkPool } from '../pool/bulk-pool.js';
import type { RequestOrigin } from '../decision-log/line.js';
import { echoingRequestId, originOf } from './request-ids.js';

/** Where a bulk goes, and, when the path was chosen by measuring them, the placement measuring its costs. */
type PlacedBulk = { path: 'inline'; measured?: MeasuredPlacement } | { path: 'pool'; bulk: BulkPool; measured?: MeasuredPlacement };

/**
 * A bulk's path: the front's unless there is a pool and the bulk is explained (worth a worker at any size: explanations may be as long as the
 * answer budget) or big, and names no `uri` (the front holds the entity cache) and no token (the front verifies them), while no shadow policy
 * is written (the front decides checks by the shadows too, and keeps them for impact previews). Big bulks take the path measured faster,
 * when it is measured.
 */
function placedBulk(pool: AppContext['pool'], bytes: Buffer, explain: boolean, shadowed: boolean): PlacedBulk {
  if (pool === undefined || shadowed || (!explain && bytes.length < pool.minimumBodyLength) || plainlyNamesUri(bytes) || plainlyNamesToken(bytes)) return { path: 'inline' };
  const measured = explain ? undefined : pool.placement;
  if (measured === undefined) return { path: 'pool', bulk: pool.bulk };
  return measured.path() === 'pool' ? { path: 'pool', bulk: pool.bulk, measured } : { path: 'inline', measured };
}

/** A bulk's decisions from the pool, as BulkPool.decide gives them, with what it cost told to `placement`. */
async function measuredInPool(bulk: BulkPool, placement: MeasuredPlacement, bytes: Buffer, origin: RequestOrigin): Promise<string | undefined> {
  let workerMs: number | undefined;
  placement.handedOff();
  try {
    return await bulk.decide(bytes, false, (took) => (workerMs = took), origin);
  } finally {
    placement.answeredByPool(bytes.length, workerMs);
  }
}

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
    // The bulk body stays bytes here: a worker decodes and reads it, or the front does (readBulkBody).
    acceptJsonBytes(bulkScope, (bytes) => bytes);
    const validate = compiledOnFirstUse(compileBulkValidator);
    const validateQuery = compiledOnFirstUse(() => createAjv(true).compile(bulkCheckQuerySchema));
    const { pool } = context;
    const limits = bulkLimitsOf(config);

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
      // The schema documents the body; readBulkBody validates it, wherever it is read.
      validatorCompiler: ({ httpPart }) => (httpPart === 'querystring' ? validateQuery : () => true),
      handler: async (request, reply) => {
        const bytes = request.body as Buffer | undefined;
        // No body at all (no content type either): as /check answers it.
        if (bytes === undefined) throw new RequestValidationError([{ loc: ['body'], msg: 'must be of type array', type: 'type_error' }]);
        const { explain, conflicts } = request.query as FromSchema<typeof bulkCheckQuerySchema>;
        if (explain) await explainGuard?.(request, reply);
        const placed = placedBulk(pool, bytes, explain, context.snapshots.shadow !== undefined);
        if (placed.path === 'pool') {
          const decided =
            placed.measured === undefined ? await placed.bulk.decide(bytes, explain, undefined, originOf(request)) : await measuredInPool(placed.bulk, placed.measured, bytes, originOf(request));
          if (decided !== undefined) return answerDecided(reply, revision, decided, (json) => json);
        }
        const decided = checks.checkMany(readBulkBody(bytes.toString('utf8'), validate, limits), explain, originOf(request), conflicts === 'refuse');
        if (explain) return answerDecided(reply, revision, decided);
        await answerDecided(reply, revision, decided, decisionsJson);
        if (placed.path === 'inline') placed.measured?.decidedInline(bytes.length);
      },
    });
  });
};
