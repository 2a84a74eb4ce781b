import type { FromSchema } from 'json-schema-to-ts';

/** What an audit record says a write did. */
export const POLICY_OPERATIONS = ['policy.create', 'policy.replace', 'policy.delete', 'policy.restore', 'policy.baseline'] as const;
export const ENTITY_OPERATIONS = ['entity.create', 'entity.update', 'entity.delete'] as const;
export const SCHEMAS_OPERATIONS = ['schemas.replace', 'schemas.delete', 'schemas.restore'] as const;

const cursorSchema = {
  type: 'string',
  pattern: '^[0-9]{1,15}$',
  description: 'The `next_cursor` of the previous page: the page after it, older records.',
} as const;

/** The paging part of every audit list: newest first, `limit` records from `cursor` on. */
export const auditPageQuerySchema = (maxPageSize: number) =>
  ({
    type: 'object',
    properties: {
      limit: { type: 'integer', minimum: 1, maximum: maxPageSize, default: 50 },
      cursor: cursorSchema,
    },
  }) as const;

export const auditQuerySchema = (maxPageSize: number) =>
  ({
    type: 'object',
    properties: {
      ...auditPageQuerySchema(maxPageSize).properties,
      since: { type: 'string', format: 'date-time', description: 'Only records written at or after this time (ISO 8601).' },
      until: { type: 'string', format: 'date-time', description: 'Only records written before this time (ISO 8601).' },
      target: {
        type: 'string',
        minLength: 1,
        description: 'Only records about this target: `policy:<name>`, `entity:<uri>` or `schemas`; a trailing `*` matches every target that starts with the rest (`policy:*`).',
      },
      actor: { type: 'string', minLength: 1, description: 'Only records written with the admin key of this name (`anonymous` when authentication is off).' },
    },
  }) as const;

export const auditRecordSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer', description: 'Grows with every record.' },
    time: { type: 'string', format: 'date-time' },
    operation: { type: 'string', enum: [...POLICY_OPERATIONS, ...ENTITY_OPERATIONS, ...SCHEMAS_OPERATIONS] },
    target: { type: 'string', description: '`policy:<name>`, `entity:<uri>`, or `schemas` (the attribute schema document).' },
    actor: { type: 'string', description: 'The name of the admin key used; `anonymous` when authentication is off.' },
    client: { type: 'string', description: 'The client address.' },
    request_id: { type: 'string' },
    route: { type: 'string', description: 'Method and route of the request, e.g. `POST /create-policy`.' },
    version: { type: 'integer', description: 'Policies and schemas: the version this write made.' },
    restored_from: { type: 'integer', description: 'Restores: the version restored.' },
    changed_keys: { type: 'array', items: { type: 'string' }, description: 'Entities: attribute keys added, removed or changed.' },
    before: {
      description:
        'The target before the write; null when it did not exist. A policy, or the schema document, as it was stored; an entity as `{type, attributes}` with its attribute values when the server records them (`--audit-values`), else as `{type, keys}`.',
    },
    after: { description: 'As `before`, after the write; null for a deletion.' },
  },
  required: ['id', 'time', 'operation', 'target', 'actor', 'client', 'request_id', 'route', 'before', 'after'],
  additionalProperties: false,
} as const;

/** An audit record as the admin API answers it (the dashboard reads these). */
export type AuditRecordAnswer = FromSchema<typeof auditRecordSchema>;

export const auditPageSchema = {
  type: 'object',
  properties: {
    records: { type: 'array', items: auditRecordSchema },
    next_cursor: { type: ['string', 'null'], description: 'Pass as `cursor` for the next (older) page; null on the last page.' },
  },
  required: ['records', 'next_cursor'],
  additionalProperties: false,
} as const;
