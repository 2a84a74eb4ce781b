import { request } from 'undici';
import { CLOSE_WAIT_MILLIS } from './entries.js';

/** A batch is posted once it holds this many lines, or this many bytes, or has waited LINGER_MS. */
const BATCH_LINES = 1000;
const BATCH_BYTES = 1024 * 1024;
const LINGER_MS = 200;
/** A collector that has not answered a batch within this is taken as failed for that attempt. */
const REQUEST_TIMEOUT_MS = 10_000;
/** Attempts at one batch before its lines are dropped: 5 retries, 0.25 s doubling to 4 s apart (about 8 s in all). */
const ATTEMPTS = 6;
const FIRST_RETRY_MS = 250;

interface Batch {
  text: string;
  lines: number;
  /** What the front counted its lines as holding (see DecisionLog), told back with them. */
  held: number;
}

/**
 * What the sink tells of each batch it is done with: its lines delivered, or dropped (the collector
 * refused them or could not be reached), and the bytes the front counted them as (`held`).
 */
export interface SinkReport {
  delivered(lines: number, held: number): void;
  dropped(lines: number, held: number): void;
}

/**
 * Decision log lines posted to a collector over HTTP, as NDJSON (`application/x-ndjson`), in
 * batches, one request at a time in order. A batch the collector fails (a connection error, a
 * timeout, a status other than 2xx) is tried again with back-off and dropped after ATTEMPTS. It keeps
 * what it is given: the front bounds that (DecisionLog's capacity counts lines until `report` hears
 * of them), and drops lines past it rather than wait, so a dead or slow collector costs decisions nothing.
 */
export class HttpSink {
  private readonly batches: Batch[] = [];
  private open: Batch = { text: '', lines: 0, held: 0 };
  private lingering: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  private closing = false;
  /** Aborted once close's wait is over: the request in flight is abandoned then, not left to its own timeout. */
  private readonly abandon = new AbortController();

  constructor(
    private readonly url: string,
    private readonly report: SinkReport,
    /** How long close() tries to deliver what is left. */
    private readonly closeWaitMillis = CLOSE_WAIT_MILLIS,
    /** How the sink waits (its back-off between attempts, and its wait on close); tests end the waits at once. */
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref()),
  ) {}

  /** Lines (each ending in a newline) to deliver, which the front counted as `held` bytes. */
  add(text: string, lines: number, held = 0): void {
    this.open.text += text;
    this.open.lines += lines;
    this.open.held += held;
    if (this.open.lines >= BATCH_LINES || this.open.text.length >= BATCH_BYTES) this.cut();
    else this.lingering ??= setTimeout(() => this.cut(), LINGER_MS);
  }

  /** Delivers what it holds, for at most its close wait; drops (and reports) whatever is left then, and abandons the request in flight. */
  async close(): Promise<void> {
    this.closing = true;
    this.cut();
    await Promise.race([this.sending ?? Promise.resolve(), this.sleep(this.closeWaitMillis)]);
    const left = this.batches.reduce((lines, batch) => lines + batch.lines, 0);
    const held = this.batches.reduce((bytes, batch) => bytes + batch.held, 0);
    this.batches.length = 0;
    this.abandon.abort();
    if (left > 0) this.report.dropped(left, held);
  }

  private cut(): void {
    clearTimeout(this.lingering);
    this.lingering = undefined;
    if (this.open.lines > 0) this.batches.push(this.open);
    this.open = { text: '', lines: 0, held: 0 };
    this.sending ??= this.sendAll().finally(() => (this.sending = undefined));
  }

  private async sendAll(): Promise<void> {
    for (let batch = this.batches[0]; batch !== undefined; batch = this.batches[0]) {
      const delivered = await this.deliver(batch);
      // close() may have dropped it meanwhile.
      if (this.batches[0] !== batch) return;
      this.batches.shift();
      if (delivered) this.report.delivered(batch.lines, batch.held);
      else this.report.dropped(batch.lines, batch.held);
    }
  }

  private async deliver(batch: Batch): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      if (await this.post(batch.text)) return true;
      if (attempt === ATTEMPTS || this.closing) return false;
      const backOff = FIRST_RETRY_MS * 2 ** (attempt - 1);
      await this.sleep(backOff / 2 + Math.random() * (backOff / 2));
    }
  }

  private async post(text: string): Promise<boolean> {
    try {
      const answer = await request(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-ndjson' },
        body: text,
        headersTimeout: REQUEST_TIMEOUT_MS,
        bodyTimeout: REQUEST_TIMEOUT_MS,
        signal: this.abandon.signal,
      });
      await answer.body.dump();
      return answer.statusCode >= 200 && answer.statusCode < 300;
    } catch {
      return false;
    }
  }
}
