import { deciderOf, type Decision } from '../engine/index.js';
import type { DecisionTally } from '../decision-log/line.js';

/**
 * What the decisions of one traced request came to: told each decision through the request's origin
 * (see RequestOrigin.trace), read as the span's attributes when it ends.
 */
export class RequestTrace implements DecisionTally {
  decisions = 0;
  allowed = 0;
  /** Where they were decided: on the front thread, in the worker pool, or both for a bulk split between them. */
  pooled = false;
  front = false;
  /** The last decision decided here: what a single check's span names as its decider. */
  last: Decision | undefined;
  /** How its checks' tokens and registered entities were read: at hand, or waited for (see ResolutionTally). */
  private readonly read = { tokensVerified: 0, tokensFromMemory: 0, entitiesRead: 0, entitiesFromCache: 0 };

  identified(fromMemory: boolean): void {
    if (fromMemory) this.read.tokensFromMemory++;
    else this.read.tokensVerified++;
  }

  registryRead(fromMemory: boolean): void {
    if (fromMemory) this.read.entitiesFromCache++;
    else this.read.entitiesRead++;
  }

  /** Told of each decision made here, in order, when its items are traced (a bulk's `?trace_items=true`). */
  itemTraced: ((decision: Decision, index: number) => void) | undefined;

  decided(decision: Decision): void {
    this.itemTraced?.(decision, this.decisions);
    this.decisions++;
    if (decision.allowed) this.allowed++;
    this.front = true;
    this.last = decision;
  }

  decidedInPool(allowed: number, denied: number): void {
    this.decisions += allowed + denied;
    this.allowed += allowed;
    this.pooled = true;
  }

  /** The span's attributes for these decisions: never an attribute value, a token or a claim. */
  attributes(): Record<string, string | number | boolean> {
    if (this.decisions === 0) return this.readAttributes();
    const attributes: Record<string, string | number | boolean> = {
      ...this.readAttributes(),
      'verdict.decisions': this.decisions,
      'verdict.allowed_decisions': this.allowed,
      'verdict.evaluation': this.pooled && this.front ? 'front and pool' : this.pooled ? 'pool' : 'front',
    };
    if (this.decisions !== 1 || this.last === undefined) return attributes;
    return { ...attributes, ...decisionAttributes(this.last) };
  }

  /** How many tokens were verified or found verified, and entities read from the store or the cache: only those that happened. */
  private readAttributes(): Record<string, number> {
    const { tokensVerified, tokensFromMemory, entitiesRead, entitiesFromCache } = this.read;
    return {
      ...(tokensVerified > 0 && { 'verdict.tokens_verified': tokensVerified }),
      ...(tokensFromMemory > 0 && { 'verdict.tokens_from_memory': tokensFromMemory }),
      ...(entitiesRead > 0 && { 'verdict.entities_read': entitiesRead }),
      ...(entitiesFromCache > 0 && { 'verdict.entities_from_cache': entitiesFromCache }),
    };
  }
}

/** What decided one decision, as span attributes: names only. */
export function decisionAttributes(decision: Decision): Record<string, string | boolean> {
  const decider = deciderOf(decision);
  return {
    'verdict.allowed': decision.allowed,
    ...(decider !== undefined && { 'verdict.decided_by': decider.kind }),
    ...(decider?.kind === 'rule' && { 'verdict.policy': decider.policy, 'verdict.rule': decider.rule }),
    ...(decider?.kind === 'default' && { 'verdict.default_effect': decider.effect }),
  };
}
