import type { FromSchema } from 'json-schema-to-ts';

/** Changed checks an impact answer shows with both explanations, at most. */
export const MAX_IMPACT_SAMPLE = 10;
/** Decision-log lines one preview replays at most, and by default. */
export const MAX_LOG_REPLAY_LINES = 100_000;
export const DEFAULT_LOG_REPLAY_LINES = 10_000;

const flips = {
  allow_to_deny: { type: 'integer', description: 'Checks allowed now that the change would deny.' },
  deny_to_allow: { type: 'integer', description: 'Checks denied now that the change would allow.' },
} as const;
const group = { type: 'object', properties: { key: { type: 'string' }, ...flips }, required: ['key', 'allow_to_deny', 'deny_to_allow'], additionalProperties: false } as const;
const decided = { type: 'object', properties: { allowed: { type: 'boolean' }, reason: { type: 'string' }, explain: { type: 'object', additionalProperties: true } }, required: ['allowed', 'reason'], additionalProperties: false } as const;

/** `POST /admin/policies/impact`: a proposed change, nothing written. */
export const impactRequestSchema = {
  type: 'object',
  description: 'A change to preview: policies to create or replace (as `POST /admin/policies` takes them), names of policies to delete, past versions to restore; any of them together.',
  properties: {
    policies: { type: 'array', items: {}, description: 'Policies to create, or to replace the policy of their name.' },
    delete: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 256 }, description: 'Names of policies in force to delete.' },
    restore: {
      type: 'array',
      items: { type: 'object', properties: { name: { type: 'string', minLength: 1, maxLength: 256 }, version: { type: 'integer', minimum: 1 } }, required: ['name', 'version'], additionalProperties: false },
      description: 'Past versions to make current again (see the policy history).',
    },
    source: {
      type: 'string',
      enum: ['recent_checks', 'decision_log'],
      default: 'recent_checks',
      description: "What to replay: the checks this process keeps in memory (`--recent-checks`), or the newest lines of its decision log file (`--decision-log <path>`).",
    },
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_LOG_REPLAY_LINES,
      default: DEFAULT_LOG_REPLAY_LINES,
      description: 'With `source: decision_log`: how many of the newest lines to replay.',
    },
  },
  additionalProperties: false,
} as const;

export const impactReportSchema = {
  type: 'object',
  properties: {
    process: { type: 'object', properties: { pid: { type: 'integer' }, hostname: { type: 'string' } }, required: ['pid', 'hostname'], additionalProperties: false, description: 'The process that answered: each replays the checks it decided itself.' },
    source: {
      type: 'string',
      enum: ['recent_checks', 'decision_log'],
      description: 'What was replayed: the checks this process kept in memory (--recent-checks), as it read them; or the lines of its decision log file, each decided on the attributes it logged as resolved, at its time.',
    },
    replayed: { type: 'integer' },
    from: { type: ['string', 'null'], description: 'When the oldest replayed check was decided.' },
    to: { type: ['string', 'null'], description: 'When the newest replayed check was decided.' },
    changed: { type: 'object', properties: flips, required: ['allow_to_deny', 'deny_to_allow'], additionalProperties: false },
    by_action: { type: 'array', items: group },
    by_rule: {
      type: 'array',
      items: { type: 'object', properties: { before: { type: 'string' }, after: { type: 'string' }, ...flips }, required: ['before', 'after', 'allow_to_deny', 'deny_to_allow'], additionalProperties: false },
      description: 'What decided the changed checks now and what would: `<policy>/<rule>`, `default allow`, `default deny` or `no policies`.',
    },
    by_principal_type: { type: 'array', items: group, description: "By the principal uri's type (before its first colon); `(none)` without one." },
    by_resource_type: { type: 'array', items: group, description: "By the resource uri's type; `(none)` without one." },
    sample: {
      type: 'array',
      maxItems: MAX_IMPACT_SAMPLE,
      items: { type: 'object', properties: { check: { type: 'object', additionalProperties: true }, before: decided, after: decided }, required: ['check', 'before', 'after'], additionalProperties: false },
      description: `Up to ${MAX_IMPACT_SAMPLE} changed checks, as the server read them, each decided and explained both ways.`,
    },
    sample_cut: { type: 'string', description: 'Why the sample holds fewer changed checks than it could.' },
    recent_checks: {
      type: 'object',
      properties: { capacity: { type: 'integer' }, skipped_for_size: { type: 'integer' } },
      required: ['capacity', 'skipped_for_size'],
      additionalProperties: false,
      description: 'How many checks this process keeps, and how many it did not keep for their size.',
    },
    decision_log: {
      type: 'object',
      properties: {
        file: { type: 'string' },
        lines: { type: 'integer', description: 'Lines read from the end of the file.' },
        skipped: {
          type: 'object',
          properties: {
            masked: { type: 'integer', description: 'Lines with masked values (--decision-log-mask): not decidable as they were.' },
            refused: { type: 'integer', description: 'Checks refused for breaking the attribute schemas: nothing was decided.' },
            unreadable: { type: 'integer', description: 'Lines that are not decisions as this server logs them, or longer than 64 KB.' },
          },
          required: ['masked', 'refused', 'unreadable'],
          additionalProperties: false,
        },
        cut: { type: 'string', description: 'Why older lines were not read.' },
      },
      required: ['file', 'lines', 'skipped'],
      additionalProperties: false,
      description: 'With `source: decision_log`: what was read of the file.',
    },
  },
  required: ['process', 'source', 'replayed', 'from', 'to', 'changed', 'by_action', 'by_rule', 'by_principal_type', 'by_resource_type', 'sample', 'recent_checks'],
  additionalProperties: false,
} as const;
export type ImpactAnswer = FromSchema<typeof impactReportSchema>;
export type ImpactRequest = FromSchema<typeof impactRequestSchema>;

const outcomes = {
  agree: { type: 'integer' },
  allow_to_deny: { type: 'integer', description: 'Checks the live policies allowed and the shadows would deny.' },
  deny_to_allow: { type: 'integer', description: 'Checks the live policies denied and the shadows would allow.' },
} as const;
const shadowDecided = {
  type: 'object',
  properties: { allowed: { type: 'boolean' }, reason: { type: 'string' }, explain: { type: 'object', additionalProperties: true }, explain_cut: { type: 'string' } },
  required: ['allowed', 'reason'],
  additionalProperties: false,
} as const;

/** `GET /admin/shadow`. */
export const shadowReportSchema = {
  type: 'object',
  properties: {
    policies: {
      type: 'array',
      items: {
        type: 'object',
        properties: { name: { type: 'string' }, in_place_of: { type: ['string', 'null'] }, source: { type: 'string' } },
        required: ['name', 'in_place_of', 'source'],
        additionalProperties: false,
      },
      description: 'The shadow policies, each with the live policy it stands in for (null: added beside them) and where it was written (`admin API`, or `file <name>` with --policies).',
    },
    decided: { type: 'object', properties: outcomes, required: ['agree', 'allow_to_deny', 'deny_to_allow'], additionalProperties: false, description: 'Checks this process decided both ways since it started.' },
    disagreements: {
      type: 'array',
      items: {
        type: 'object',
        properties: { at: { type: 'string' }, check: { type: 'object', additionalProperties: true }, live: shadowDecided, shadow: shadowDecided },
        required: ['at', 'check', 'live', 'shadow'],
        additionalProperties: false,
      },
    },
    history: {
      type: 'array',
      items: { type: 'object', properties: { at: { type: 'string', description: 'The start of the minute.' }, ...outcomes }, required: ['at', 'agree', 'allow_to_deny', 'deny_to_allow'], additionalProperties: false },
      description: 'The counts of each of the last 60 minutes in which this process decided checks both ways, oldest first: the agreement over time.',
    },
  },
  required: ['policies', 'decided', 'history', 'disagreements'],
  additionalProperties: false,
} as const;
