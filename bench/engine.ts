import { compile, evaluate, type DecisionRequest } from '../src/engine/index.js';
import type { Policy } from '../src/schemas/policy.js';

/**
 * `count` policies of one allow rule each, keyed by a distinct resource attribute value, plus a
 * principal condition every rule shares: the shape of per-resource grants at scale.
 */
export function keyedPolicies(count: number): Policy[] {
  return Array.from({ length: count }, (_, index) => ({
    version: '1.0',
    name: `grant-${index}`,
    description: null,
    default_effect: 'deny' as const,
    rules: [
      {
        name: `grant-${index}`,
        effect: 'allow' as const,
        principal_conditions: [{ path: 'attributes.role', operator: '==' as const, value: 'reader' }],
        resource_conditions: [{ path: 'attributes.id', operator: '==' as const, value: `doc-${index}` }],
        actions: ['read'],
      },
    ],
  }));
}

export function keyedRequests(policyCount: number, count: number): DecisionRequest[] {
  return Array.from({ length: count }, (_, index) => ({
    principal: { uri: undefined, attributes: new Map([['role', 'reader']]) },
    resource: { uri: undefined, attributes: new Map([['id', `doc-${(index * 7919) % policyCount}`]]) },
    action: 'read',
  }));
}

/** Decisions per second of the engine alone on one thread, best of a few timed rounds after warm-up. */
export function engineDecisionsPerSecond(policyCount: number, roundMillis = 400): number {
  const snapshot = compile(keyedPolicies(policyCount), 1);
  const requests = keyedRequests(policyCount, 1024);
  let allowed = 0;
  const round = () => {
    const started = performance.now();
    let decisions = 0;
    while (performance.now() - started < roundMillis) {
      for (const request of requests) if (evaluate(snapshot, request).allowed) allowed++;
      decisions += requests.length;
    }
    return (decisions / (performance.now() - started)) * 1000;
  };
  round();
  const rates = [round(), round(), round()];
  if (allowed === 0) throw new Error('the engine benchmark allowed nothing: its policies do not match its requests');
  return Math.max(...rates);
}
