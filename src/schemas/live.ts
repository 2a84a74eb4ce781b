import type { FromSchema } from 'json-schema-to-ts';

export const MAX_TOP = 100;

export const liveQuerySchema = {
  type: 'object',
  properties: {
    since: {
      type: 'integer',
      minimum: 0,
      description: 'Epoch ms: only the seconds that closed after it (pass the `at` of the last second you hold).',
    },
    top: { type: 'integer', minimum: 1, maximum: MAX_TOP, default: 10, description: 'How many rules and policies to list.' },
  },
  additionalProperties: false,
} as const;

export const latencySchema = {
  type: 'object',
  properties: {
    count: { type: 'integer', description: 'Checks answered (status below 400).' },
    p50_ms: { type: ['number', 'null'], description: 'Null when no check was answered.' },
    p99_ms: { type: ['number', 'null'] },
  },
  required: ['count', 'p50_ms', 'p99_ms'],
  additionalProperties: false,
} as const;

export const secondSchema = {
  type: 'object',
  properties: {
    at: { type: 'integer', description: 'Epoch ms at the end of the interval.' },
    seconds: { type: 'number', description: 'Length of the interval: 1, or more when the process was held up; rates are counts divided by it.' },
    allowed: { type: 'integer' },
    denied: { type: 'integer' },
    check: { ...latencySchema, description: 'Latency of POST /check.' },
    bulk: { ...latencySchema, description: 'Latency of POST /check/bulk (a whole bulk).' },
    errors_4xx: { type: 'integer' },
    errors_5xx: { type: 'integer' },
    schema_violations: { type: 'integer', description: 'Checks and plans whose attributes broke the attribute schemas: decided (`--schema-enforcement warn`) or refused (`reject`).' },
    pool: {
      type: ['object', 'null'],
      description: 'The bulk worker pool; null without one (`--evaluation inline`).',
      properties: {
        queue: { type: 'integer', description: 'Bulks waiting for a worker at the end of the interval.' },
        utilization: { type: 'number', description: 'Share of the workers’ time spent deciding in the interval (0 to 1).' },
      },
      required: ['queue', 'utilization'],
      additionalProperties: false,
    },
    feed: {
      type: 'object',
      description: 'Store changes applied in the interval, and the longest time from commit to being served (null when none).',
      properties: { changes: { type: 'integer' }, lag_max_ms: { type: ['number', 'null'] } },
      required: ['changes', 'lag_max_ms'],
      additionalProperties: false,
    },
  },
  required: ['at', 'seconds', 'allowed', 'denied', 'check', 'bulk', 'errors_4xx', 'errors_5xx', 'schema_violations', 'pool', 'feed'],
  additionalProperties: false,
} as const;

export const sentSideSchema = {
  type: 'object',
  description: 'As sent: `attributes` with `--recent-denials-values`, otherwise only their keys (`attribute_keys`).',
  properties: {
    uri: { type: ['string', 'null'] },
    attributes: { type: 'object', additionalProperties: true },
    attribute_keys: { type: 'array', items: { type: 'string' } },
  },
  required: ['uri'],
  additionalProperties: false,
} as const;

export const recentDenialSchema = {
  type: 'object',
  properties: {
    at: { type: 'integer', description: 'Epoch ms.' },
    principal: sentSideSchema,
    resource: sentSideSchema,
    action: { type: 'string' },
    action_attributes: { type: 'object', additionalProperties: true, description: "The action's attributes as sent, with `--recent-denials-values`; absent when the check sent none." },
    action_attribute_keys: { type: 'array', items: { type: 'string' }, description: "Their keys only, without `--recent-denials-values`." },
    context: { type: 'object', additionalProperties: true, description: 'The context as sent, with `--recent-denials-values`; absent when the check sent none.' },
    context_keys: { type: 'array', items: { type: 'string' }, description: 'Its keys only, without `--recent-denials-values`.' },
    reason: { type: 'string' },
    revision: { type: 'integer', description: 'The policy snapshot revision that denied it.' },
    schema_violations: {
      type: 'array',
      items: { type: 'string' },
      description: 'What the check broke of the attribute schemas, when it was decided despite them (`--schema-enforcement warn`); absent when it broke none.',
    },
  },
  required: ['at', 'principal', 'resource', 'action', 'reason', 'revision'],
  additionalProperties: false,
} as const;

export const liveSchema = {
  type: 'object',
  properties: {
    now: { type: 'integer', description: 'Epoch ms.' },
    started_at: { type: 'integer', description: 'Epoch ms: when this process started counting.' },
    window_seconds: { type: 'integer', description: 'Seconds kept: the window.' },
    seconds: { type: 'array', items: secondSchema, description: 'Per-second aggregates, oldest first.' },
    rules: {
      type: 'object',
      description: 'Decisions in the window by rule and by policy, most first, and by default effect; counted by the minute.',
      properties: {
        since: { type: 'integer', description: 'Epoch ms: the start of the oldest minute counted.' },
        rules: {
          type: 'array',
          items: {
            type: 'object',
            properties: { policy: { type: 'string' }, rule: { type: 'string' }, effect: { enum: ['allow', 'deny'] }, decisions: { type: 'integer' } },
            required: ['policy', 'rule', 'effect', 'decisions'],
            additionalProperties: false,
          },
        },
        policies: {
          type: 'array',
          items: {
            type: 'object',
            properties: { policy: { type: 'string' }, allowed: { type: 'integer' }, denied: { type: 'integer' } },
            required: ['policy', 'allowed', 'denied'],
            additionalProperties: false,
          },
        },
        default_effect: {
          type: 'object',
          properties: { allowed: { type: 'integer' }, denied: { type: 'integer' } },
          required: ['allowed', 'denied'],
          additionalProperties: false,
        },
      },
      required: ['since', 'rules', 'policies', 'default_effect'],
      additionalProperties: false,
    },
    recent_denials: {
      type: 'object',
      properties: {
        capacity: { type: 'integer', description: 'How many are kept (`--recent-denials`); 0: none.' },
        per_second: { type: 'integer', description: 'The most kept in any one second (`--recent-denials-rate`); 0: every denial.' },
        values: { type: 'boolean', description: 'Whether attribute values are shown (`--recent-denials-values`).' },
        denials: {
          type: 'array',
          description: 'Newest first.',
          items: recentDenialSchema,
        },
      },
      required: ['capacity', 'per_second', 'values', 'denials'],
      additionalProperties: false,
    },
  },
  required: ['now', 'started_at', 'window_seconds', 'seconds', 'rules', 'recent_denials'],
  additionalProperties: false,
} as const;

/** The answer of GET /admin/live, and its parts (the dashboard reads them too). */
export type LiveAnswer = FromSchema<typeof liveSchema>;
export type LiveSecond = FromSchema<typeof secondSchema>;
export type LatencySummary = FromSchema<typeof latencySchema>;
export type RecentDenial = FromSchema<typeof recentDenialSchema>;
export type SentSide = FromSchema<typeof sentSideSchema>;
