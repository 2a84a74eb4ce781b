/**
 * Why a call to Verdict failed: the server's answer (`status`, its `detail`, the request id it
 * gave), or, where no answer came (`status` undefined), what happened on the way (`cause`: a
 * timeout, a refused connection, a closed client).
 */
export class VerdictError extends Error {
  override readonly name = 'VerdictError';

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

/** The message of an answer's detail: the sentence, or the issues one per line. */
export function describeDetail(detail: unknown): string {
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) return detail.map((issue: { loc?: unknown[]; msg?: string }) => `${(issue.loc ?? []).join('.')}: ${issue.msg ?? ''}`).join('; ');
  return JSON.stringify(detail);
}
