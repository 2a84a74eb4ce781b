import type { Decision, DecisionRequest } from '../engine/index.js';
import type { CheckInput, EntityInput } from '../registry/check-request.js';

/** One decision as the decision log records it, before it is serialized. */
export interface DecisionRecord {
  /** Epoch milliseconds. */
  time: number;
  input: CheckInput;
  request: DecisionRequest;
  decision: Decision;
  revision: number;
  latencyMs: number;
}

// Object.fromEntries defines keys such as `__proto__` as own properties, so they are logged as sent.
const attributes = (map: ReadonlyMap<string, unknown>) => Object.fromEntries(map);
const asSent = (side: EntityInput) => ({ uri: side.uri, attributes: attributes(side.attributes) });

/** The JSON line for one decision: the check as sent, the attributes it was decided on, the outcome. */
export function decisionLine({ time, input, request, decision, revision, latencyMs }: DecisionRecord): string {
  return `${JSON.stringify({
    time: new Date(time).toISOString(),
    revision,
    request: { principal: asSent(input.principal), resource: asSent(input.resource), action: input.action },
    resolved: { principal: attributes(request.principal.attributes), resource: attributes(request.resource.attributes) },
    allowed: decision.allowed,
    reason: decision.reason,
    latency_ms: Math.round(latencyMs * 1000) / 1000,
  })}\n`;
}
