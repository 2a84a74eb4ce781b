import type { CheckInput, EntityInput } from '../requests/check-request.js';
import type { RecentDenial, SentSide } from '../schemas/live.js';
import { checkSize, MAX_KEPT_CHECK_BYTES } from '../engine/json-size.js';
import { PerSecondShare } from '../per-second-share.js';
import { systemClock, type Clock } from '../clock.js';

interface Entry {
  time: number;
  input: CheckInput | undefined;
  reason: string;
  revision: number;
  /** What the check broke of the attribute schemas (warn); none: undefined or empty. */
  violations: readonly string[] | undefined;
  /** What the check holds, by deniedCheckSize (0: no check). */
  bytes: number;
}

/** What a denied check the ring would hold holds: its uris and attributes (checkSize), and its principal's token. */
const deniedCheckSize = (input: CheckInput): number => checkSize(input) + (input.principal.credential?.token.length ?? 0);

const sentSide = (side: EntityInput, withValues: boolean): SentSide =>
  withValues
    ? { uri: side.uri ?? null, attributes: Object.fromEntries(side.attributes) }
    : { uri: side.uri ?? null, attribute_keys: [...side.attributes.keys()] };

/** The action's attributes and the context the check sent (none: no field), with their values or only their keys as the sides are. */
function sentActionAndContext({ actionAttributes, context }: CheckInput, withValues: boolean): Pick<RecentDenial, 'action_attributes' | 'action_attribute_keys' | 'context' | 'context_keys'> {
  const sent: ReturnType<typeof sentActionAndContext> = {};
  if (actionAttributes !== undefined) {
    if (withValues) sent.action_attributes = Object.fromEntries(actionAttributes);
    else sent.action_attribute_keys = [...actionAttributes.keys()];
  }
  if (context !== undefined) {
    if (withValues) sent.context = Object.fromEntries(context);
    else sent.context_keys = [...context.keys()];
  }
  return sent;
}

/**
 * The last `capacity` denied checks, at most `perSecond` of them each second (0: every one), in a
 * ring of entries made once: recording one stores three references and a time (no allocation).
 * Values are masked when the list is read, unless `withValues` (`--recent-denials-values`); until
 * then the ring holds the checks as they were read. A check larger than MAX_KEPT_CHECK_BYTES is not
 * kept (it is counted), so that the ring holds at most capacity × 16 KB: /check is open to anyone,
 * and its denials must not hold a process's memory. Keeping every denial of a flood of them would
 * also grow V8's young generation by the checks that outlive it (16 MiB more RSS under /check).
 */
export class RecentDenials {
  private readonly entries: Entry[];
  private next = 0;
  private size = 0;
  /** Denials not kept for the size of their checks, since the start. */
  skipped = 0;
  /** What the checks kept hold, by deniedCheckSize: at most `boundBytes`. */
  heldBytes = 0;

  private readonly share: PerSecondShare;

  constructor(
    readonly capacity: number,
    readonly withValues: boolean,
    readonly perSecond = 0,
    private readonly clock: Clock = systemClock,
  ) {
    this.share = new PerSecondShare(perSecond, clock);
    this.entries = Array.from({ length: capacity }, () => ({ time: 0, input: undefined, reason: '', revision: 0, violations: undefined, bytes: 0 }));
  }

  /** The most the ring may hold, in bytes by deniedCheckSize. */
  get boundBytes(): number {
    return this.capacity * MAX_KEPT_CHECK_BYTES;
  }

  /** Called for every denial of a busy process: past this second's share it returns before reading the clock. */
  record(input: CheckInput, reason: string, revision: number, violations?: readonly string[]): void {
    if (!this.share.take()) return;
    const bytes = deniedCheckSize(input);
    if (bytes > MAX_KEPT_CHECK_BYTES) {
      this.skipped++;
      return;
    }
    const entry = this.entries[this.next]!;
    this.heldBytes += bytes - entry.bytes;
    entry.bytes = bytes;
    entry.time = this.clock.now();
    entry.input = input;
    entry.reason = reason;
    entry.revision = revision;
    entry.violations = violations;
    this.next = this.next + 1 === this.capacity ? 0 : this.next + 1;
    if (this.size < this.capacity) this.size++;
  }

  /**
   * How many denials `record` would keep now, at most: what a worker deciding a bulk is asked to send
   * back of it (its last ones), so that it sends none the front would drop.
   */
  wanted(): number {
    return this.share.left(this.capacity);
  }

  /** Newest first. */
  list(): RecentDenial[] {
    const denials: RecentDenial[] = [];
    for (let back = 1; back <= this.size; back++) {
      const { time, input, reason, revision, violations } = this.entries[(this.next - back + this.capacity) % this.capacity]!;
      denials.push({
        at: time,
        principal: sentSide(input!.principal, this.withValues),
        resource: sentSide(input!.resource, this.withValues),
        action: input!.action,
        ...sentActionAndContext(input!, this.withValues),
        reason,
        revision,
        // The messages name attribute paths and the rules of the schemas, never a value sent: shown masked or not.
        ...(violations !== undefined && violations.length > 0 && { schema_violations: [...violations] }),
      });
    }
    return denials;
  }
}
