import type { Transport } from './transport.js';
import type { DecisionCache } from './decision-cache.js';
import { answerError, VerdictUnavailableError } from './errors.js';
import { HEARTBEAT_MILLIS, type ChangeLine } from './wire.js';

/** A feed silent for this long is taken for lost: three of the server's heartbeats. */
const SILENCE_MILLIS = 3 * HEARTBEAT_MILLIS;
const RECONNECT_MILLIS = { first: 100, most: 5000 };

/**
 * Follows the server's decision change feed (`GET /admin/changes`) for a DecisionCache: a new
 * revision drops every decision, changed entities drop those that read them. While the feed is not
 * followed (not yet, lost, silent too long) the cache is empty and serves nothing; it reconnects
 * by itself.
 */
export class ChangeFollower {
  /** The revision the feed last named; undefined while the feed is not followed. */
  revision: number | undefined;
  /** Whether that revision's policies read the decision's time: then its decisions change as time passes, and none is kept. */
  timeDependent = false;
  /** How late the last change reached the client: its arrival minus the server's `at`, in milliseconds. */
  lastDelayMs: number | undefined;
  /** Changes applied so far (revisions and entity lines; heartbeats are not changes). */
  changesApplied = 0;
  private controller: AbortController | undefined;
  private silence: NodeJS.Timeout | undefined;
  private reconnectMillis = RECONNECT_MILLIS.first;
  private closed = false;

  constructor(
    private readonly transport: Transport,
    private readonly cache: DecisionCache,
    private readonly onError: (error: unknown) => void = () => {},
  ) {
    void this.connect();
  }

  /** Whether decisions made at `revision` may be kept and served now. */
  keeps(revision: number | undefined): boolean {
    return revision !== undefined && revision === this.revision && !this.timeDependent;
  }

  close(): void {
    this.closed = true;
    this.lost();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const controller = (this.controller = new AbortController());
    try {
      const response = await this.transport.stream('/admin/changes', controller.signal);
      if (response.statusCode !== 200) {
        const text = await response.body.text();
        throw answerError(`GET /admin/changes answered ${response.statusCode}: ${text.slice(0, 200)}`, response.statusCode, text.slice(0, 200), undefined, false);
      }
      this.watchSilence();
      let partial = '';
      for await (const chunk of response.body) {
        const lines = (partial + chunk.toString('utf8')).split('\n');
        partial = lines.pop()!;
        for (const line of lines) if (line !== '') this.apply(JSON.parse(line) as ChangeLine);
      }
      throw new VerdictUnavailableError('GET /admin/changes: the change feed ended', undefined, undefined, undefined);
    } catch (error) {
      if (!controller.signal.aborted || !this.closed) this.onError(error);
    }
    this.lost();
    if (this.closed) return;
    setTimeout(() => void this.connect(), this.reconnectMillis).unref();
    this.reconnectMillis = Math.min(this.reconnectMillis * 2, RECONNECT_MILLIS.most);
  }

  private apply(line: ChangeLine): void {
    this.watchSilence();
    this.reconnectMillis = RECONNECT_MILLIS.first;
    if (line.revision !== undefined && (line.revision !== this.revision || line.time_dependent === true)) {
      this.cache.clear();
      this.revision = line.revision;
      this.timeDependent = line.time_dependent === true;
    }
    if (line.entities === 'all') this.cache.clear();
    else if (line.entities !== undefined) this.cache.dropUris(line.entities);
    if (line.revision !== undefined || line.entities !== undefined) {
      this.lastDelayMs = Math.max(0, Date.now() - line.at);
      this.changesApplied++;
    }
  }

  private watchSilence(): void {
    clearTimeout(this.silence);
    this.silence = setTimeout(() => this.controller?.abort(), SILENCE_MILLIS).unref();
  }

  /** The feed is not followed: nothing cached may be served. */
  private lost(): void {
    clearTimeout(this.silence);
    this.revision = undefined;
    this.cache.clear();
    this.controller?.abort();
  }
}
