import { decisionTime } from './time.js';

/**
 * An entity as the engine sees it during one decision: its uri (when the caller named one) and its
 * attributes after resolution. Attributes live in a Map so that keys such as `__proto__` or
 * `constructor` are ordinary keys, never prototype lookups.
 */
export interface ResolvedEntity {
  uri: string | undefined;
  attributes: ReadonlyMap<string, unknown>;
}

/** A check as the engine decides it: both entities resolved, the action and, when sent, its attributes and the context. */
export interface DecisionRequest {
  principal: ResolvedEntity;
  resource: ResolvedEntity;
  action: string;
  /** The action's attributes; absent when the check sent none. */
  actionAttributes?: ReadonlyMap<string, unknown>;
  /** The attributes of the request itself (time, address, channel...); absent when the check sent none. */
  context?: ReadonlyMap<string, unknown>;
  /**
   * The decision's time (`context.time`), RFC 3339 in UTC: given by a `verdict test` case, else read
   * from the clock when a condition first asks for it, and kept for the rest of the decision.
   */
  time?: string;
}

/** The parts of a check that conditions and references read. */
export const REQUEST_PARTS = ['principal', 'resource', 'action', 'context'] as const;
export type RequestPart = (typeof REQUEST_PARTS)[number];

const NO_ATTRIBUTES: ReadonlyMap<string, unknown> = new Map();

/**
 * A part of the request as conditions read it: the action is an entity whose uri is its name, the
 * context one with attributes only. Built only for rules with conditions on those parts.
 */
export function partOf(request: DecisionRequest, part: RequestPart): ResolvedEntity {
  switch (part) {
    case 'principal':
      return request.principal;
    case 'resource':
      return request.resource;
    case 'action':
      return { uri: request.action, attributes: request.actionAttributes ?? NO_ATTRIBUTES };
    case 'context':
      // Its `time` is read by the lookup of that path (see compileLookup), from the request: the clock only when a condition asks.
      return { uri: undefined, attributes: request.context ?? NO_ATTRIBUTES };
  }
}

/** The decision's time (see DecisionRequest.time). */
export function timeOf(request: DecisionRequest): string {
  request.time ??= decisionTime();
  return request.time;
}

