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

/**
 * Why a check cannot be decided as asked: a supplied attribute contradicts the registry (`conflict`),
 * the principal's credential is refused (`credential`), the attributes break the attribute schemas
 * under reject (`schema`), or the check asks what no check may (`request`: written `claims`, the
 * action `*`). A value, not a failure: each surface answers it in its own way (src/decide/undecidable-answers.ts).
 */
export type UndecidableKind = 'conflict' | 'credential' | 'schema' | 'request';

/** A check that cannot be decided as asked, of a kind, with a message saying why (see UndecidableKind). */
export class Undecidable extends Error {
  constructor(
    readonly kind: UndecidableKind,
    message: string,
  ) {
    super(message);
  }
}

/** A bearer token that did not verify (401): answered with `WWW-Authenticate: Bearer error="invalid_token"`, as RFC 6750 has it. */
export class InvalidToken extends ClientError {
  constructor(detail: string) {
    super(401, detail);
  }
}

/** The WWW-Authenticate header of an InvalidToken answer. */
export const INVALID_TOKEN_CHALLENGE = 'Bearer error="invalid_token"';

/** Most issues a 422 lists; past them, one more item says that more were cut. */
export const MAX_LISTED_ISSUES = 20;

/** The issues a 422 lists: all of them, or the first MAX_LISTED_ISSUES and an item saying that more were cut. */
export function listedIssues(issues: readonly ValidationIssue[]): ValidationIssue[] {
  if (issues.length <= MAX_LISTED_ISSUES) return [...issues];
  // No count: finding them all is itself bounded (see compileListingErrors), so it may not be known.
  const cut = { loc: [issues[0]!.loc[0] ?? 'body'], msg: `more errors were found than the ${MAX_LISTED_ISSUES} listed: fix these and send the request again`, type: 'too_many_errors' };
  return [...issues.slice(0, MAX_LISTED_ISSUES), cut];
}

/** A request that is well-formed JSON but breaks the contract: 422 with the offending fields (see listedIssues). */
export class RequestValidationError extends Error {
  readonly statusCode = 422;
  readonly issues: ValidationIssue[];
  constructor(issues: readonly ValidationIssue[]) {
    const listed = listedIssues(issues);
    super(listed.map((issue) => `${issue.loc.join('.')}: ${issue.msg}`).join('; '));
    this.issues = listed;
  }
}

export const notFound = (what: 'Policy' | 'Entity') => new ClientError(404, `${what} not found`);

/**
 * A write refused because what it would change is managed in files (`--policies`, `--schemas`):
 * 409 saying where to change it instead and what still works.
 */
export function managedInFiles(what: string, where: string, change: string, stillWorks: string): ClientError {
  return new ClientError(409, `${what} are managed from ${where}: change ${change} there instead; ${stillWorks}`);
}

/** The request cannot be completed now, for the reason `detail` gives the client: answered 503. */
export class UnavailableError extends Error {
  constructor(readonly detail: string) {
    super(detail);
  }
}
