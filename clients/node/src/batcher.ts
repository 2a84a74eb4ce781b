import { VerdictError, VerdictRequestError, VerdictUnavailableError } from './errors.js';
import { header, type Transport } from './transport.js';
import type { CallTracing, Caller } from './tracing.js';
import { MIN_REVISION_HEADER, REVISION_HEADER, type CheckRequest, type Decision, type ValidationIssue } from './wire.js';

/** A decision with the policy revision it was made at (`verdict-revision`). */
export interface Decided {
  decision: Decision;
  revision: number | undefined;
}

interface Pending {
  check: CheckRequest;
  /** Decide only at this revision or later (`verdict-min-revision`). */
  minRevision: number | undefined;
  /** Who asked for it: the bulk's span links the caller's span, naming the route that asked. */
  caller: Caller;
  resolve: (decided: Decided) => void;
  reject: (error: unknown) => void;
}

export interface BatchOptions {
  /** Most checks in one `/check/bulk`: the server's `--bulk-check-max-requests` (default 1000). */
  maxBatch: number;
  /** How long a check waits for others to join its bulk, in milliseconds: 0 (the default) sends what the current turn of the event loop issued. */
  windowMs: number;
}

/**
 * Gathers the checks issued together into one `POST /check/bulk` (explained checks apart), split at
 * the server's limit; each caller gets its own answer. A check the server refuses fails only its
 * caller: a 422 names the items it refuses, and the rest are sent again; a bulk refused for another
 * reason is sent again one check at a time, so that each caller gets the server's answer to its own.
 */
export class CheckBatcher {
  private readonly queues: Record<'plain' | 'explained', Pending[]> = { plain: [], explained: [] };
  private readonly scheduled = { plain: false, explained: false };

  constructor(
    private readonly transport: Transport,
    private readonly options: BatchOptions,
    private readonly tracing: CallTracing,
  ) {}

  decide(check: CheckRequest, explain: boolean, minRevision: number | undefined, route?: string): Promise<Decided> {
    const kind = explain ? 'explained' : 'plain';
    const caller = this.tracing.caller(route);
    return new Promise((resolve, reject) => {
      this.queues[kind].push({ check, minRevision, caller, resolve, reject });
      if (this.scheduled[kind]) return;
      this.scheduled[kind] = true;
      const flush = () => {
        this.scheduled[kind] = false;
        const pending = this.queues[kind].splice(0);
        for (let start = 0; start < pending.length; start += this.options.maxBatch) void this.send(pending.slice(start, start + this.options.maxBatch), explain);
      };
      if (this.options.windowMs > 0) setTimeout(flush, this.options.windowMs);
      else setImmediate(flush);
    });
  }

  private async send(batch: Pending[], explain: boolean): Promise<void> {
    if (batch.length === 1) return this.sendAlone(batch[0]!, explain);
    const minRevision = Math.max(...batch.map((pending) => pending.minRevision ?? 0));
    let answers: Decision[];
    let revision: number | undefined;
    try {
      const answer = await this.tracing.bulk(batch.map((pending) => pending.caller), (traced) =>
        this.transport.send({
          method: 'POST',
          // A check that cannot be decided as asked refuses the bulk, naming it, so that its caller is answered as /check answers it.
          path: explain ? '/check/bulk?conflicts=refuse&explain=true' : '/check/bulk?conflicts=refuse',
          body: batch.map((pending) => pending.check),
          headers: { ...traced, ...(minRevision > 0 && { [MIN_REVISION_HEADER]: String(minRevision) }) },
          retryable: true,
          admin: explain,
        }),
      );
      answers = answer.body as Decision[];
      revision = revisionOf(answer.headers);
    } catch (error) {
      return this.recover(batch, explain, error);
    }
    if (!Array.isArray(answers) || answers.length !== batch.length) {
      const wrong = new VerdictUnavailableError(`POST /check/bulk: ${batch.length} checks, but ${Array.isArray(answers) ? answers.length : 'no list of'} answers`, undefined, undefined, undefined);
      for (const pending of batch) pending.reject(wrong);
      return;
    }
    batch.forEach((pending, index) => pending.resolve({ decision: answers[index]!, revision }));
  }

  private async sendAlone(pending: Pending, explain: boolean): Promise<void> {
    try {
      const answer = await this.tracing.bulk([pending.caller], (traced) =>
        this.transport.send({
          method: 'POST',
          path: explain ? '/check?explain=true' : '/check',
          body: pending.check,
          headers: { ...traced, ...(pending.minRevision !== undefined && { [MIN_REVISION_HEADER]: String(pending.minRevision) }) },
          retryable: true,
          admin: explain,
        }),
      );
      pending.resolve({ decision: answer.body as Decision, revision: revisionOf(answer.headers) });
    } catch (error) {
      pending.reject(error);
    }
  }

  /** A bulk refused whole: fail the items a 422 names and send the rest again, halve it on 413, or send each alone after another 4xx. */
  private async recover(batch: Pending[], explain: boolean, error: unknown): Promise<void> {
    if (!(error instanceof VerdictError) || error.status === undefined || error.status >= 500) {
      for (const pending of batch) pending.reject(error);
      return;
    }
    const refused = error.status === 422 ? issuesByItem(error.detail) : undefined;
    if (refused !== undefined) {
      const rest: Pending[] = [];
      batch.forEach((pending, index) => {
        const issues = refused.get(index);
        if (issues === undefined) rest.push(pending);
        else pending.reject(asAlone(issues, error.requestId));
      });
      if (rest.length > 0) await this.send(rest, explain);
      return;
    }
    if (error.status === 413) {
      const half = Math.ceil(batch.length / 2);
      await Promise.all([this.send(batch.slice(0, half), explain), this.send(batch.slice(half), explain)]);
      return;
    }
    await Promise.all(batch.map((pending) => this.sendAlone(pending, explain)));
  }
}

/** The error /check gives a check the bulk refused: 400 with the message for a conflict, else 422 with its issues. */
function asAlone(issues: ValidationIssue[], requestId: string | undefined): VerdictError {
  const conflict = issues.find((issue) => issue.type === 'attribute_conflict');
  if (conflict !== undefined) return new VerdictRequestError(`POST /check: 400 ${conflict.msg}`, 400, conflict.msg, requestId);
  return new VerdictRequestError(`POST /check: 422 ${issues.map((issue) => `${issue.loc.join('.')}: ${issue.msg}`).join('; ')}`, 422, issues, requestId);
}

/** A bulk's 422 issues by the item they are about (`loc` `body.<index>...`), each located as a single check's would be; undefined when one names no item. */
function issuesByItem(detail: unknown): Map<number, ValidationIssue[]> | undefined {
  if (!Array.isArray(detail) || detail.length === 0) return undefined;
  const byItem = new Map<number, ValidationIssue[]>();
  for (const issue of detail as ValidationIssue[]) {
    // The items past the issues listed are sent again, and named by the next answer.
    if (issue.type === 'too_many_errors') continue;
    const index = issue.loc?.[1];
    if (issue.loc?.[0] !== 'body' || typeof index !== 'number') return undefined;
    const issues = byItem.get(index) ?? [];
    issues.push({ ...issue, loc: ['body', ...issue.loc.slice(2)] });
    byItem.set(index, issues);
  }
  return byItem.size > 0 ? byItem : undefined;
}

export function revisionOf(headers: Record<string, string | string[] | undefined>): number | undefined {
  const text = header(headers, REVISION_HEADER);
  return text === undefined ? undefined : Number(text);
}
