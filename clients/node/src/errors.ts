/**
 * Why a call to Verdict failed: the server's answer (`status`, its `detail`, the request id it
 * gave), or, where no answer came (`status` undefined), what happened on the way (`cause`). Every
 * error the client gives is one of the kinds below, each a VerdictError, so that an app tells them
 * apart with `instanceof` instead of reading messages.
 */
export class VerdictError extends Error {
  override readonly name: string = 'VerdictError';

  constructor(
    message: string,
    /** The HTTP status of the answer; undefined when there was none. */
    readonly status: number | undefined,
    /** The answer's `detail`: a sentence, or for a 422 the list of issues (`loc`, `msg`, `type`). */
    readonly detail: unknown,
    /** The `x-request-id` the server gave the request, for its logs. */
    readonly requestId: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** Whether the same request may be sent again: no answer came, or the server was unavailable for now. */
  get retryable(): boolean {
    return this.status === undefined || this.status === 503;
  }
}

/** One of the issues of a 422: where in the request (`loc`, from `body`) and what is wrong there. */
export interface RequestIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/**
 * The request itself was refused (400, 404, 409, 413, 422): sending it again changes nothing; fix
 * what `detail` says. For a 422, `issues` locates each problem in the request.
 */
export class VerdictRequestError extends VerdictError {
  override readonly name = 'VerdictRequestError';

  get issues(): RequestIssue[] {
    return Array.isArray(this.detail) ? (this.detail as RequestIssue[]) : [];
  }
}

/** The principal's credential (a bearer token) was not accepted (401 with a Bearer challenge): `detail` says why. */
export class VerdictCredentialError extends VerdictError {
  override readonly name = 'VerdictCredentialError';
}

/** The admin key was missing, wrong, or of a role that may not do this (401 or 403 on a call that needs the key). */
export class VerdictAdminKeyError extends VerdictError {
  override readonly name = 'VerdictAdminKeyError';
}

/** The server could not be reached, or answered that it cannot serve for now (5xx): the call may succeed later. */
export class VerdictUnavailableError extends VerdictError {
  override readonly name: string = 'VerdictUnavailableError';
}

/** No answer came within the time the call was given (`timeoutMs`). */
export class VerdictTimeoutError extends VerdictUnavailableError {
  override readonly name = 'VerdictTimeoutError';
}

/** The error of an answer that is not a 2xx, by what the caller can do about it. */
export function answerError(message: string, status: number, detail: unknown, requestId: string | undefined, bearerChallenge: boolean): VerdictError {
  if (status === 401 && bearerChallenge) return new VerdictCredentialError(message, status, detail, requestId);
  if (status === 401 || status === 403) return new VerdictAdminKeyError(message, status, detail, requestId);
  if (status >= 500) return new VerdictUnavailableError(message, status, detail, requestId);
  return new VerdictRequestError(message, status, detail, requestId);
}

/** The message of an answer's detail: the sentence, or the issues one per line. */
export function describeDetail(detail: unknown): string {
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) return detail.map((issue: { loc?: unknown[]; msg?: string }) => `${(issue.loc ?? []).join('.')}: ${issue.msg ?? ''}`).join('; ');
  return JSON.stringify(detail);
}
