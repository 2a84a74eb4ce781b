import type { Clock } from '../clock.js';
import { decisionOf } from '../decide/kernel.js';
import { MAX_DISAGREEMENTS, sampled, shadowOutcome, type ShadowedBulk, type ShadowOutcome } from '../decide/shadowed.js';
import { maskedCheck, maskedExplanation } from '../decision-log/masked-view.js';
import type { DecisionLogMask } from '../decision-log/mask.js';
import { AnswerBudget, explain, ExplanationTooLarge, type Decision, type DecisionRequest, type Snapshot } from '../engine/index.js';
import type { Metrics } from '../live/metrics.js';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import { checkAsRead } from './impact.js';
import { checkSize, MAX_KEPT_CHECK_BYTES } from '../engine/json-size.js';
import type { FromSchema } from 'json-schema-to-ts';
import type { shadowReportSchema } from '../schemas/impact.js';

/** Minutes of agreement kept for the chart of it over time. */
export const HISTORY_MINUTES = 60;
/** The longest explanation a disagreement keeps, in characters of JSON; a longer one is left out, saying so. */
const MAX_EXPLANATION = 8192;

/** A check the shadow policies decided otherwise than the live ones, with both decisions explained. */
export type Disagreement = FromSchema<typeof shadowReportSchema>['disagreements'][number];
type MinuteCounts = FromSchema<typeof shadowReportSchema>['history'][number];

/**
 * Decides the checks of this thread by the shadow policies too (a share of them, `samplePercent`),
 * and takes what a worker's shadows said of a pooled bulk, never changing an answer: counts how often
 * they agree (the metric and `counts`) and keeps the latest disagreements with both explanations.
 * Costs nothing while there are no shadows.
 */
export class ShadowDecisions {
  readonly counts: Record<ShadowOutcome, number> = { agree: 0, allow_to_deny: 0, deny_to_allow: 0 };
  private readonly disagreements: Disagreement[] = [];
  /** The counts of each minute in which the shadows decided, oldest first, the last HISTORY_MINUTES of them. */
  private readonly minutes: (Record<ShadowOutcome, number> & { minute: number })[] = [];

  constructor(
    private readonly snapshots: PolicySnapshots,
    private readonly metrics: Metrics,
    private readonly samplePercent: number,
    /** The values the disagreements kept never show (`--decision-log-mask`). */
    private readonly mask: DecisionLogMask,
    private readonly clock: Clock,
  ) {}

  /** `live` is what the live policies decided for `request`. */
  observe(request: DecisionRequest, live: Decision): void {
    const shadow = this.snapshots.shadow;
    if (shadow === undefined || !sampled(this.samplePercent)) return;
    const decided = decisionOf(shadow, request);
    const outcome = shadowOutcome(live, decided);
    this.count(outcome, 1);
    if (outcome !== 'agree') this.keep(request, live, shadow, decided);
  }

  /**
   * What the shadows said of the sampled checks of a bulk a worker decided (it holds the shadows'
   * snapshot too); the checks they disagreed on are decided again here, to be explained.
   */
  observeBulk({ counts, disagreements }: ShadowedBulk): void {
    for (const outcome of Object.keys(counts) as ShadowOutcome[]) if (counts[outcome] > 0) this.count(outcome, counts[outcome]);
    const shadow = this.snapshots.shadow;
    if (shadow === undefined) return;
    for (const request of disagreements) this.keep(request, decisionOf(this.snapshots.current, request), shadow, decisionOf(shadow, request));
  }

  private count(outcome: ShadowOutcome, checks: number): void {
    this.counts[outcome] += checks;
    this.metrics.shadowOutcomes[outcome].inc(checks);
    this.countInMinute(outcome, checks);
  }

  /** Keeps a disagreement, `live` and `decided` (by `shadow`) explained. */
  private keep(request: DecisionRequest, live: Decision, shadow: Snapshot, decided: Decision): void {
    this.disagreements.unshift({
      at: new Date(this.clock.now()).toISOString(),
      // A large check is not kept: a hundred of them would hold a hundred request bodies.
      check: checkSize(request) > MAX_KEPT_CHECK_BYTES ? { omitted: `larger than ${MAX_KEPT_CHECK_BYTES} bytes` } : maskedCheck(checkAsRead(request), this.mask),
      live: explained(this.snapshots.current, request, live, this.mask),
      shadow: explained(shadow, request, decided, this.mask),
    });
    if (this.disagreements.length > MAX_DISAGREEMENTS) this.disagreements.pop();
  }

  private countInMinute(outcome: ShadowOutcome, checks: number): void {
    const minute = Math.floor(this.clock.now() / 60_000);
    let counts = this.minutes.at(-1);
    if (counts === undefined || counts.minute !== minute) {
      this.minutes.push((counts = { minute, agree: 0, allow_to_deny: 0, deny_to_allow: 0 }));
      while (this.minutes.length > 0 && this.minutes[0]!.minute <= minute - HISTORY_MINUTES) this.minutes.shift();
    }
    counts[outcome] += checks;
  }

  /** The counts of each of the last HISTORY_MINUTES minutes in which the shadows decided, oldest first. */
  history(): MinuteCounts[] {
    return this.minutes.map(({ minute, ...counts }) => ({ at: new Date(minute * 60_000).toISOString(), ...counts }));
  }

  /** The latest disagreements, newest first. */
  latest(): Disagreement[] {
    return [...this.disagreements];
  }
}

function explained(snapshot: Snapshot, request: DecisionRequest, decision: Decision, mask: DecisionLogMask): Disagreement['live'] {
  try {
    // An explanation is a plain JSON object, as the schema's open object types it.
    return { ...decision, explain: maskedExplanation(explain(snapshot, request, decision, new AnswerBudget(MAX_EXPLANATION)) as unknown as Record<string, unknown>, mask) };
  } catch (error) {
    if (!(error instanceof ExplanationTooLarge)) throw error;
    return { ...decision, explain_cut: `its explanation is longer than ${MAX_EXPLANATION} characters` };
  }
}
