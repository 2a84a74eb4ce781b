import { Pool, type Dispatcher } from 'undici';
import { API_KEY_HEADER, REQUEST_ID_HEADER } from './wire.js';
import { answerError, describeDetail, VerdictError, VerdictTimeoutError, VerdictUnavailableError } from './errors.js';

export interface TransportOptions {
  /** The server's origin, `http://127.0.0.1:8421`; with `socketPath`, only its host is sent. */
  url: string;
  /** A Unix socket to connect through (the sidecar's `--socket`) instead of TCP. */
  socketPath?: string;
  /** Connections kept open to the server (default 4). */
  connections?: number;
  /** Requests sent on a connection before their answers come back (HTTP/1.1 pipelining; default 1, none). */
  pipelining?: number;
  /** Longest wait for an answer, in milliseconds (default 5000). */
  timeoutMs?: number;
  /** How many times a request that is safe to send again is retried after no answer or a 503 (default 2). */
  retries?: number;
  /** The admin key, sent as `way-api-key` on admin calls and on explained checks. */
  adminKey?: string;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export interface Call {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Whether it may be sent again after no answer or a 503: checks and reads are; writes only with an idempotency key. */
  retryable: boolean;
  /** Whether it needs the admin key. */
  admin?: boolean;
}

const RETRY_BASE_MILLIS = 25;

/** HTTP to one Verdict server on a keep-alive pool: JSON in and out, timeouts, retries of what may be retried, errors as VerdictError. */
export class Transport {
  readonly pool: Pool;
  private readonly timeoutMs: number;
  private readonly retries: number;

  constructor(private readonly options: TransportOptions) {
    this.pool = new Pool(options.url, {
      connections: options.connections ?? 4,
      pipelining: options.pipelining ?? 1,
      ...(options.socketPath !== undefined && { socketPath: options.socketPath }),
    });
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.retries = options.retries ?? 2;
  }

  headersFor(call: Pick<Call, 'admin' | 'headers'>, hasBody: boolean): Record<string, string> {
    return {
      ...(hasBody && { 'content-type': 'application/json' }),
      ...(call.admin && this.options.adminKey !== undefined && { [API_KEY_HEADER]: this.options.adminKey }),
      ...call.headers,
    };
  }

  /** Sends `call`; resolves with a 2xx answer, rejects with a VerdictError for anything else. */
  async send(call: Call): Promise<Answer> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(call);
      } catch (error) {
        if (!(error instanceof VerdictError) || !error.retryable || !call.retryable || attempt >= this.retries) throw error;
        await new Promise((resolve) => setTimeout(resolve, RETRY_BASE_MILLIS * 2 ** attempt));
      }
    }
  }

  /** Starts a request whose body the caller reads as a stream (the change feed); undici's own errors as VerdictError. */
  async stream(path: string, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    try {
      return await this.pool.request({ method: 'GET', path, headers: this.headersFor({ admin: true }, false), signal });
    } catch (error) {
      throw new VerdictUnavailableError(`GET ${path}: ${(error as Error).message}`, undefined, undefined, undefined, { cause: error });
    }
  }

  private async once(call: Call): Promise<Answer> {
    const text = call.body === undefined ? undefined : JSON.stringify(call.body);
    let response: Dispatcher.ResponseData;
    let raw: string;
    try {
      response = await this.pool.request({
        method: call.method,
        path: call.path,
        headers: this.headersFor(call, text !== undefined),
        body: text,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      raw = await response.body.text();
    } catch (error) {
      if ((error as Error).name === 'TimeoutError') throw new VerdictTimeoutError(`${call.method} ${call.path}: no answer within ${this.timeoutMs} ms`, undefined, undefined, undefined, { cause: error });
      throw new VerdictUnavailableError(`${call.method} ${call.path}: ${(error as Error).message}`, undefined, undefined, undefined, { cause: error });
    }
    const requestId = header(response.headers, REQUEST_ID_HEADER);
    let body: unknown;
    try {
      body = raw === '' ? undefined : JSON.parse(raw);
    } catch {
      const message = `${call.method} ${call.path}: answered ${response.statusCode} with a body that is not JSON`;
      throw answerError(message, response.statusCode, raw.slice(0, 200), requestId, false);
    }
    if (response.statusCode >= 200 && response.statusCode < 300) return { status: response.statusCode, headers: response.headers, body };
    const detail = (body as { detail?: unknown } | undefined)?.detail ?? body;
    const challenge = header(response.headers, 'www-authenticate') ?? '';
    throw answerError(`${call.method} ${call.path}: ${response.statusCode} ${describeDetail(detail)}`, response.statusCode, detail, requestId, challenge.includes('invalid_token'));
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** A header's value, the first when it came several times. */
export function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}
