import { deciderOf, type Decision } from '../engine/index.js';

/** Rules counted each on their own; decisions of any further rule are counted together as "other". */
export const MAX_COUNTED_RULES = 1000;
/** Whole minutes of rule counts kept besides the current one. */
const WINDOW_MINUTES = 15;
const MINUTE_MS = 60_000;

export type Effect = 'allow' | 'deny';

/**
 * What decisions are counted under: one rule of one policy, or the default effect (no policies at
 * all is a default denial). Rules past MAX_COUNTED_RULES (and any decision the engine did not make)
 * are counted together under policy and rule `(other)`, which no slug can spell.
 */
export type CountedDecider = { kind: 'rule'; policy: string; rule: string; effect: Effect } | { kind: 'default'; effect: Effect };

export const OTHER_RULES = '(other)';

/** What `decision` is counted under. */
export function countedDecider(decision: Decision): CountedDecider {
  const decider = deciderOf(decision);
  const effect = decision.allowed ? 'allow' : 'deny';
  if (decider === undefined) return { kind: 'rule', policy: OTHER_RULES, rule: OTHER_RULES, effect };
  return decider.kind === 'no_policies' ? { kind: 'default', effect } : decider;
}

interface Slot {
  decider: CountedDecider;
  /** Decisions since the process started. */
  total: number;
  /** `total` when the current minute began. */
  atMinuteStart: number;
}

export interface RuleCount {
  policy: string;
  rule: string;
  effect: Effect;
  decisions: number;
}

export interface PolicyCount {
  policy: string;
  allowed: number;
  denied: number;
}

/** The decisions of the window, by rule and by policy (most first), and by default effect. */
export interface RulesInWindow {
  /** Epoch ms: the window's start (the start of its oldest whole minute). */
  since: number;
  rules: RuleCount[];
  policies: PolicyCount[];
  default_effect: { allowed: number; denied: number };
}

/**
 * Counts decisions by the rule or default that gave them. The hot path (`count`) is one WeakMap
 * lookup by the decision object (the engine builds one per rule and reuses it) and an increment;
 * the window is kept by the minute: each minute closed keeps only the rules that decided in it.
 */
export class RuleTally {
  private readonly slotOfDecision = new WeakMap<Decision, Slot>();
  private readonly slots = new Map<string, Slot>();
  private countedRules = 0;
  private readonly minutes: { start: number; counts: [Slot, number][] }[] = [];
  private minuteStart: number;

  constructor(now: number) {
    this.minuteStart = now;
  }

  count(decision: Decision, decisions = 1): void {
    (this.slotOfDecision.get(decision) ?? this.slotFor(decision)).total += decisions;
  }

  /** Counts decisions made elsewhere (a worker thread), already tallied by what gave them. */
  countDecided(decider: CountedDecider, decisions: number): void {
    this.slotByKey(decider).total += decisions;
  }

  /** Every counter since start (for Prometheus): rules first, as counted. */
  totals(): { decider: CountedDecider; total: number }[] {
    return [...this.slots.values()].map(({ decider, total }) => ({ decider, total }));
  }

  /** Called every second: at each minute's end, keeps what each rule decided in it and forgets minutes past the window. */
  tick(now: number): void {
    if (now - this.minuteStart < MINUTE_MS) return;
    const counts: [Slot, number][] = [];
    for (const slot of this.slots.values()) {
      if (slot.total !== slot.atMinuteStart) counts.push([slot, slot.total - slot.atMinuteStart]);
      slot.atMinuteStart = slot.total;
    }
    this.minutes.push({ start: this.minuteStart, counts });
    if (this.minutes.length > WINDOW_MINUTES) this.minutes.shift();
    this.minuteStart = now;
  }

  /** The window's counts: the kept minutes and the current one; `limit` rules and policies at most. */
  inWindow(limit: number): RulesInWindow {
    const counted = new Map<Slot, number>();
    const add = (slot: Slot, decisions: number) => counted.set(slot, (counted.get(slot) ?? 0) + decisions);
    for (const minute of this.minutes) for (const [slot, decisions] of minute.counts) add(slot, decisions);
    for (const slot of this.slots.values()) if (slot.total !== slot.atMinuteStart) add(slot, slot.total - slot.atMinuteStart);

    const rules: RuleCount[] = [];
    const policies = new Map<string, PolicyCount>();
    const defaults = { allowed: 0, denied: 0 };
    for (const [{ decider }, decisions] of counted) {
      const side = decider.effect === 'allow' ? 'allowed' : 'denied';
      if (decider.kind === 'default') {
        defaults[side] += decisions;
        continue;
      }
      rules.push({ policy: decider.policy, rule: decider.rule, effect: decider.effect, decisions });
      let policy = policies.get(decider.policy);
      if (policy === undefined) policies.set(decider.policy, (policy = { policy: decider.policy, allowed: 0, denied: 0 }));
      policy[side] += decisions;
    }
    const byName = (a: { policy: string }, b: { policy: string }) => (a.policy < b.policy ? -1 : a.policy > b.policy ? 1 : 0);
    return {
      since: this.minutes[0]?.start ?? this.minuteStart,
      rules: rules.sort((a, b) => b.decisions - a.decisions || byName(a, b) || (a.rule < b.rule ? -1 : 1)).slice(0, limit),
      policies: [...policies.values()].sort((a, b) => b.allowed + b.denied - (a.allowed + a.denied) || byName(a, b)).slice(0, limit),
      default_effect: defaults,
    };
  }

  private slotFor(decision: Decision): Slot {
    const slot = this.slotByKey(countedDecider(decision));
    this.slotOfDecision.set(decision, slot);
    return slot;
  }

  private slotByKey(decider: CountedDecider): Slot {
    const key = JSON.stringify(decider.kind === 'default' ? [decider.effect] : [decider.policy, decider.rule, decider.effect]);
    let slot = this.slots.get(key);
    if (slot !== undefined) return slot;
    if (decider.kind === 'rule' && decider.policy !== OTHER_RULES) {
      if (this.countedRules === MAX_COUNTED_RULES) return this.slotByKey({ kind: 'rule', policy: OTHER_RULES, rule: OTHER_RULES, effect: decider.effect });
      this.countedRules++;
    }
    slot = { decider, total: 0, atMinuteStart: 0 };
    this.slots.set(key, slot);
    return slot;
  }
}
