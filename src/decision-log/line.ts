import type { Decision, DecisionRequest } from '../engine/index.js';
import { readCheckRequest, type CheckInput, type EntityInput } from '../registry/check-request.js';
import type { CheckRequest } from '../schemas/check.js';

/** One decision made on the front, as the decision log records it, before it is serialized. */
export interface DecisionRecord {
  /** Epoch milliseconds. */
  time: number;
  input: CheckInput;
  request: DecisionRequest;
  decision: Decision;
  revision: number;
  latencyMs: number;
}

/**
 * A bulk decided in a worker, kept as the texts the front already holds: serializing its lines is
 * left to the decision log's writer thread. Its items named no registered entity, so each was
 * decided on the attributes it was sent with.
 */
export interface BulkDecisionRecord {
  time: number;
  /** The bulk body as sent (already validated by the worker). */
  body: string;
  /** The decisions as JSON, in item order. */
  decisions: string;
  /** How many decisions (lines). */
  count: number;
  revision: number;
  /** The bulk's time shared evenly among its items. */
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

/** The JSON lines of a bulk decided in a worker, one per item, in order. */
export function bulkDecisionLines({ time, body, decisions, revision, latencyMs }: BulkDecisionRecord): string {
  const requests = JSON.parse(body) as CheckRequest[];
  const decided = JSON.parse(decisions) as Decision[];
  let lines = '';
  requests.forEach((request, index) => {
    const input = readCheckRequest(request, ['body', index]) as CheckInput;
    lines += decisionLine({ time, input, request: input, decision: decided[index]!, revision, latencyMs });
  });
  return lines;
}
