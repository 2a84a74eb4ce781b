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

/** Where in a request (or a document) an issue is: `['body', 'rules', 0, 'name']`. */
export type Location = (string | number)[];

export interface ValidationIssue {
  loc: Location;
  msg: string;
  type: string;
}
