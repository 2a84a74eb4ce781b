/** Error bodies: `{detail}` with a string, or for 422 a list naming each offending field. */
export const validationIssueSchema = {
  type: 'object',
  properties: {
    loc: { type: 'array', items: { type: ['string', 'integer'] } },
    msg: { type: 'string' },
    type: { type: 'string' },
  },
  required: ['loc', 'msg', 'type'],
  additionalProperties: false,
} as const;

export const errorResponseSchema = {
  type: 'object',
  properties: { detail: { type: 'string' } },
  required: ['detail'],
  additionalProperties: false,
} as const;

export const validationErrorResponseSchema = {
  type: 'object',
  properties: { detail: { type: 'array', items: validationIssueSchema } },
  required: ['detail'],
  additionalProperties: false,
} as const;

export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}
