import type { CheckInput, EntityInput } from '../requests/check-request.js';
import type { RecentDenial, SentSide } from '../schemas/live.js';

interface Entry {
  time: number;
  input: CheckInput | undefined;
  reason: string;
  revision: number;
  /** What the check broke of the attribute schemas (warn); none: undefined or empty. */
  violations: readonly string[] | undefined;
}

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
 * The last `capacity` denied checks, in a ring of entries made once: recording one stores three
 * references and a time (no allocation). Values are masked when the list is read, unless
 * `withValues` (`--recent-denials-values`); until then the ring holds the checks as they were read.
 */
export class RecentDenials {
  private readonly entries: Entry[];
  private next = 0;
  private size = 0;

  constructor(
    readonly capacity: number,
    readonly withValues: boolean,
  ) {
    this.entries = Array.from({ length: capacity }, () => ({ time: 0, input: undefined, reason: '', revision: 0, violations: undefined }));
  }

  record(input: CheckInput, reason: string, revision: number, time: number, violations?: readonly string[]): void {
    const entry = this.entries[this.next]!;
    entry.time = time;
    entry.input = input;
    entry.reason = reason;
    entry.revision = revision;
    entry.violations = violations;
    this.next = this.next + 1 === this.capacity ? 0 : this.next + 1;
    if (this.size < this.capacity) this.size++;
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
