import { deciderOf, type Decision } from '../engine/index.js';
import type { DeciderAttributes, DecisionTally } from '../decision-log/line.js';

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

  /** Told what decided each decision, in order, on the front or in a worker, when its items are traced (a bulk's `?trace_items=true`). */
  itemTraced: ((decider: DeciderAttributes, index: number) => void) | undefined;

  get tracesItems(): boolean {
    return this.itemTraced !== undefined;
  }

  decided(decision: Decision): void {
    this.itemTraced?.(decisionAttributes(decision), this.decisions);
    this.decisions++;
    if (decision.allowed) this.allowed++;
    this.front = true;
    this.last = decision;
  }

  decidedInPool(allowed: number, denied: number, items?: readonly DeciderAttributes[]): void {
    items?.forEach((decider, index) => this.itemTraced?.(decider, this.decisions + index));
    this.decisions += allowed + denied;
    this.allowed += allowed;
    this.pooled = true;
  }

  /**
   * The span's attributes for these decisions: never an attribute value, a token or a claim. Built by
   * assignment into one object: spreading partial objects cost several microseconds a request.
   */
  attributes(): Record<string, string | number | boolean> {
    const attributes: Record<string, string | number | boolean> = {};
    const { tokensVerified, tokensFromMemory, entitiesRead, entitiesFromCache } = this.read;
    if (tokensVerified > 0) attributes['verdict.tokens_verified'] = tokensVerified;
    if (tokensFromMemory > 0) attributes['verdict.tokens_from_memory'] = tokensFromMemory;
    if (entitiesRead > 0) attributes['verdict.entities_read'] = entitiesRead;
    if (entitiesFromCache > 0) attributes['verdict.entities_from_cache'] = entitiesFromCache;
    if (this.decisions === 0) return attributes;
    attributes['verdict.decisions'] = this.decisions;
    attributes['verdict.allowed_decisions'] = this.allowed;
    attributes['verdict.evaluation'] = this.pooled && this.front ? 'front and pool' : this.pooled ? 'pool' : 'front';
    if (this.decisions === 1 && this.last !== undefined) addDecisionAttributes(attributes, this.last);
    return attributes;
  }
}

/** What decided one decision, as span attributes: names only. */
export function decisionAttributes(decision: Decision): DeciderAttributes {
  const attributes: DeciderAttributes = {};
  addDecisionAttributes(attributes, decision);
  return attributes;
}

function addDecisionAttributes(attributes: Record<string, string | number | boolean>, decision: Decision): void {
  attributes['verdict.allowed'] = decision.allowed;
  const decider = deciderOf(decision);
  if (decider === undefined) return;
  attributes['verdict.decided_by'] = decider.kind;
  if (decider.kind === 'rule') {
    attributes['verdict.policy'] = decider.policy;
    attributes['verdict.rule'] = decider.rule;
  } else if (decider.kind === 'default') attributes['verdict.default_effect'] = decider.effect;
}
