import type { ValidationIssue } from './schemas/errors.js';

/** An error the client caused: answered with `statusCode` and `{detail}`. */
export class ClientError extends Error {
  constructor(
    readonly statusCode: number,
    readonly detail: string,
  ) {
    super(detail);
  }
}

/** A request that is well-formed JSON but breaks the contract: 422 with the offending fields. */
export class RequestValidationError extends Error {
  readonly statusCode = 422;
  constructor(readonly issues: ValidationIssue[]) {
    super(issues.map((issue) => `${issue.loc.join('.')}: ${issue.msg}`).join('; '));
  }
}

export const notFound = (what: 'Policy' | 'Entity') => new ClientError(404, `${what} not found`);

/** The request cannot be completed now, for the reason `detail` gives the client: answered 503. */
export class UnavailableError extends Error {
  constructor(readonly detail: string) {
    super(detail);
  }
}
