import { AsyncLocalStorage } from 'node:async_hooks';
import { deciderOf, type Decision } from '../engine/index.js';

/** What the decisions of one traced request came to: the span's decision attributes, read when it ends. */
export class RequestTrace {
  decisions = 0;
  allowed = 0;
  /** Where they were decided: on the front thread, in the worker pool, or both for a bulk split between them. */
  pooled = false;
  front = false;
  /** The last decision decided here: what a single check's span names as its decider. */
  last: Decision | undefined;

  /** The span's attributes for these decisions: never an attribute value, a token or a claim. */
  attributes(): Record<string, string | number | boolean> {
    if (this.decisions === 0) return {};
    const attributes: Record<string, string | number | boolean> = {
      'verdict.decisions': this.decisions,
      'verdict.allowed_decisions': this.allowed,
      'verdict.evaluation': this.pooled && this.front ? 'front and pool' : this.pooled ? 'pool' : 'front',
    };
    if (this.decisions !== 1 || this.last === undefined) return attributes;
    const decider = deciderOf(this.last);
    return {
      ...attributes,
      'verdict.allowed': this.last.allowed,
      ...(decider !== undefined && { 'verdict.decided_by': decider.kind }),
      ...(decider?.kind === 'rule' && { 'verdict.policy': decider.policy, 'verdict.rule': decider.rule }),
      ...(decider?.kind === 'default' && { 'verdict.default_effect': decider.effect }),
    };
  }
}

/**
 * The trace of the request being served, where tracing is on: the decision observer tells it each
 * decision; the HTTP hooks open it with the request's span and read it when the span ends.
 */
export class RequestTraces {
  private readonly storage = new AsyncLocalStorage<RequestTrace>();

  /** Makes `trace` the current request's for the rest of this execution and what it starts (see AsyncLocalStorage.enterWith). */
  enter(trace: RequestTrace): void {
    this.storage.enterWith(trace);
  }

  /** A decision made on this thread, for the request being served. */
  decided(decision: Decision): void {
    const trace = this.storage.getStore();
    if (trace === undefined) return;
    trace.decisions++;
    if (decision.allowed) trace.allowed++;
    trace.front = true;
    trace.last = decision;
  }

  /** A bulk decided by a worker thread, for the request being served. */
  decidedInPool(allowed: number, denied: number): void {
    const trace = this.storage.getStore();
    if (trace === undefined) return;
    trace.decisions += allowed + denied;
    trace.allowed += allowed;
    trace.pooled = true;
  }
}
