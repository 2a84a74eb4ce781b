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

/**
 * Issues in one line, `field.path: message; ...`. The first `placeParts` parts of each location name
 * a place (a file, a list item), each set off by `: ` rather than joined to the field's path.
 */
export function issuesInOneLine(issues: readonly Pick<ValidationIssue, 'loc' | 'msg'>[], placeParts = 0): string {
  return issues
    .map(({ loc, msg }) => [...loc.slice(0, placeParts).map(String), loc.slice(placeParts).join('.')].filter((part) => part !== '').concat(msg).join(': '))
    .join('; ');
}
