import type { FastifyPluginAsync } from 'fastify';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import { schemaDocumentSchema, schemasAnswerSchema, schemasWriteAnswerSchema } from '../schemas/attribute-schemas.js';
import { auditPageQuerySchema, auditPageSchema, auditRecordSchema } from '../schemas/audit.js';
import { API_KEY_SECURITY } from './admin-auth.js';
import type { RoutesOptions } from './context.js';
import { ERROR_RESPONSES } from './responses.js';
import { writerOf } from './writer.js';

const versionParams = {
  type: 'object',
  properties: { version: { type: 'integer', minimum: 1, description: 'A version from the history.' } },
  required: ['version'],
} as const;

const tags = ['schemas'];
const security = API_KEY_SECURITY;
const MANAGED_IN_FILES = 'A write answers 409 when the schemas come from a file (`--schemas`, or `--policies` and its schemas.json).';
const RECHECKED =
  'Answers once this server holds checks to it, with the stored policies that have problems against it (`recheck`): they stay in force, under every `--schema-enforcement`.';

/** Attribute schema administration under `/admin/schemas`; the caller registers it behind the admin key check. */
export const attributeSchemaRoutes: FastifyPluginAsync<RoutesOptions> = async (fastify, { context }) => {
  const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
  const { schemas } = context;

  app.get('/admin/schemas', {
    schema: { tags, security, summary: 'The attribute schema document in force', description: '404 when there is none.', response: { 200: schemasAnswerSchema, ...ERROR_RESPONSES } },
    handler: () => schemas.current(),
  });

  app.put('/admin/schemas', {
    schema: {
      tags,
      security,
      summary: 'Replace the attribute schema document',
      description: `Checked as a schema file is at start (422 naming the schema and what is wrong). ${RECHECKED} ${MANAGED_IN_FILES}`,
      body: schemaDocumentSchema,
      response: { 200: schemasWriteAnswerSchema, ...ERROR_RESPONSES },
    },
    handler: (request) => schemas.replace(request.body, writerOf(request)),
  });

  app.delete('/admin/schemas', {
    schema: {
      tags,
      security,
      summary: 'Delete the attribute schema document',
      description: `Checks, registrations and policies are no longer held to schemas. 404 when there is none. ${MANAGED_IN_FILES}`,
      response: { 200: schemasWriteAnswerSchema, ...ERROR_RESPONSES },
    },
    handler: (request) => schemas.delete(writerOf(request)),
  });

  app.get('/admin/schemas/history', {
    schema: {
      tags,
      security,
      summary: "The schema document's versions, newest first",
      description:
        'The audit records of the writes that made each version (`version`, `operation`, `actor`, `time`, the document `before` and `after`; a deletion has `after` null). The history reaches back as far as the audit trail is kept.',
      querystring: auditPageQuerySchema(context.config.maxPageSize),
      response: { 200: auditPageSchema, ...ERROR_RESPONSES },
    },
    handler: (request) => schemas.history(request.query),
  });

  app.get('/admin/schemas/history/:version', {
    schema: {
      tags,
      security,
      summary: 'One version of the schema document',
      description: 'The audit record of the write that made it; the document is its `after` (null: the version is a deletion).',
      params: versionParams,
      response: { 200: auditRecordSchema, ...ERROR_RESPONSES },
    },
    handler: (request) => schemas.version(request.params.version),
  });

  app.post('/admin/schemas/restore', {
    schema: {
      tags,
      security,
      summary: 'Make an earlier version of the schema document current again',
      description: `Recorded as a write of its own (\`schemas.restore\`), checked as a new document is. 400 when the version is a deletion. ${RECHECKED} ${MANAGED_IN_FILES}`,
      querystring: versionParams,
      response: { 200: schemasWriteAnswerSchema, ...ERROR_RESPONSES },
    },
    handler: (request) => schemas.restore(request.query.version, writerOf(request)),
  });
};
