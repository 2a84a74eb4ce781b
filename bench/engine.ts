import { compile, derive, evaluate, mongoFilter, plan, type DecisionRequest } from '../src/engine/index.js';
import type { Condition, ConditionItem, Policy } from '../src/schemas/policy.js';
import { RequestSchemas } from '../src/attribute-schemas/enforcement.js';
import { ShadowDecisions } from '../src/services/shadow-decisions.js';
import { Metrics } from '../src/live/metrics.js';
import { systemClock } from '../src/clock.js';
import type { PolicySnapshots } from '../src/snapshot/policy-snapshots.js';

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

/** `count` policies each granting the members of one team one document: a member's plan names one document. */
export function teamPolicies(count: number): Policy[] {
  return keyedPolicies(count).map((policy, index) => ({
    ...policy,
    rules: policy.rules.map((rule) => ({ ...rule, principal_conditions: [{ path: 'attributes.team', operator: '==' as const, value: `team-${index}` }] })),
  }));
}

export function keyedRequests(policyCount: number, count: number): DecisionRequest[] {
  return Array.from({ length: count }, (_, index) => ({
    principal: { uri: undefined, attributes: new Map([['role', 'reader']]) },
    resource: { uri: undefined, attributes: new Map([['id', `doc-${(index * 7919) % policyCount}`]]) },
    action: 'read',
  }));
}

/** Operations per second of `operation` on one thread, best of three timed rounds after a warm-up round. */
function bestRate(operation: () => number, roundMillis: number): number {
  const round = () => {
    const started = performance.now();
    let done = 0;
    while (performance.now() - started < roundMillis) done += operation();
    return (done / (performance.now() - started)) * 1000;
  };
  round();
  return Math.max(round(), round(), round());
}

/** Decisions per second of the engine alone on one thread. */
export function engineDecisionsPerSecond(policyCount: number, roundMillis = 400): number {
  const snapshot = compile(keyedPolicies(policyCount), 1);
  const requests = keyedRequests(policyCount, 1024);
  let allowed = 0;
  const rate = bestRate(() => {
    for (const request of requests) if (evaluate(snapshot, request).allowed) allowed++;
    return requests.length;
  }, roundMillis);
  if (allowed === 0) throw new Error('the engine benchmark allowed nothing: its policies do not match its requests');
  return rate;
}

/**
 * Plans per second of the engine alone on one thread, each rendered as a MongoDB filter. `everyone`:
 * a reader whom every policy grants one document, so the plan names all `policyCount` of them.
 * `one team`: a member of one team among `policyCount` (teamPolicies), so the plan names one.
 */
export function enginePlansPerSecond(policyCount: number, shape: 'everyone' | 'one team' = 'everyone', roundMillis = 400): number {
  const snapshot = compile(shape === 'everyone' ? keyedPolicies(policyCount) : teamPolicies(policyCount), 1);
  const principal = shape === 'everyone' ? new Map([['role', 'reader']]) : new Map([['team', `team-${Math.floor(policyCount / 2)}`]]);
  const request: DecisionRequest = { principal: { uri: undefined, attributes: principal }, resource: { uri: undefined, attributes: new Map() }, action: 'read' };
  let conditional = 0;
  const rate = bestRate(() => {
    const planned = plan(snapshot, request);
    if (planned.kind === 'conditional' && 'filter' in mongoFilter(planned.condition)) conditional++;
    return 1;
  }, roundMillis);
  if (conditional === 0) throw new Error('the plan benchmark planned nothing conditional: its policies do not match its principal');
  return rate;
}

/**
 * The owner rule (a reader may read the documents whose `owner` is their email) with the owner read
 * from the principal (`value_from`), and the same rule with the owner written as a constant: the
 * cost of a relation against the comparison it stands for, on requests that match.
 */
export function engineRelationRates(roundMillis = 400): { relation: number; constant: number } {
  const email = 'alice@example.com';
  const ownerRule = (owner: { value: string } | { value_from: string }): Policy[] => [
    {
      version: '1.0',
      name: 'documents',
      description: null,
      default_effect: 'deny',
      rules: [
        {
          name: 'owner reads',
          effect: 'allow',
          principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'reader' }],
          resource_conditions: [{ path: 'attributes.owner', operator: '==', ...owner }],
          actions: ['read'],
        },
      ],
    },
  ];
  const requests: DecisionRequest[] = Array.from({ length: 1024 }, () => ({
    principal: { uri: undefined, attributes: new Map<string, unknown>([['role', 'reader'], ['email', email]]) },
    resource: { uri: undefined, attributes: new Map([['owner', email]]) },
    action: 'read',
  }));
  const rate = (policies: Policy[]) => {
    const snapshot = compile(policies, 1);
    let allowed = 0;
    const measured = bestRate(() => {
      for (const request of requests) if (evaluate(snapshot, request).allowed) allowed++;
      return requests.length;
    }, roundMillis);
    if (allowed === 0) throw new Error('the relation benchmark allowed nothing');
    return measured;
  };
  return { relation: rate(ownerRule({ value_from: 'principal.attributes.email' })), constant: rate(ownerRule({ value: email })) };
}

const OFFICE_HOURS = { zone: 'Europe/Berlin', days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '09:00', to: '18:00' };
/** The date-time of request `index`: a minute apart from the last, from 08:00 UTC on a Friday. */
const minuteApart = (index: number) => new Date(Date.UTC(2026, 10, 27, 8) + index * 60_000).toISOString();

/** Each operator of the language's second week, against `==`, on the context value it tests. */
export const OPERATOR_CASES = [
  { name: '==', path: 'attributes.ip', operator: '==', value: '10.20.3.4', attribute: '10.20.3.4' },
  { name: 'in_cidr, IPv4', path: 'attributes.ip', operator: 'in_cidr', value: ['10.16.0.0/12', '2001:db8:42::/48'], attribute: '10.20.3.4' },
  { name: 'in_cidr, IPv6', path: 'attributes.ip', operator: 'in_cidr', value: ['10.16.0.0/12', '2001:db8:42::/48'], attribute: '2001:db8:42::7' },
  { name: 'not_in_cidr', path: 'attributes.ip', operator: 'not_in_cidr', value: '192.168.0.0/16', attribute: '10.20.3.4' },
  { name: 'matches', path: 'attributes.path', operator: 'matches', value: '^/projects/[a-z0-9-]+/reports/', attribute: '/projects/q3-plan/reports/summary.pdf' },
  // One date-time for every check, as the decision's time is within a millisecond; then one each, a minute apart.
  { name: 'before', path: 'attributes.at', operator: 'before', value: '2999-01-01T00:00:00Z', attribute: '2026-11-27T10:00:00Z' },
  { name: 'before, each its own', path: 'attributes.at', operator: 'before', value: '2999-01-01T00:00:00Z', attribute: minuteApart },
  { name: 'during', path: 'attributes.at', operator: 'during', value: OFFICE_HOURS, attribute: '2026-11-27T10:00:00Z' },
  { name: 'during, each its own', path: 'attributes.at', operator: 'during', value: OFFICE_HOURS, attribute: minuteApart },
  // A span around a written anchor, then around the decision's time, which each check reads beside its own date-time.
  { name: 'within, of', path: 'attributes.at', operator: 'within', value: { last: 'P1D', of: '2026-11-28T00:00:00Z' }, attribute: minuteApart },
  { name: 'within, decision time', path: 'attributes.at', operator: 'within', value: { last: 'P36500D' }, attribute: minuteApart },
] as const;

const ip = (value: string): Condition => ({ path: 'attributes.ip', operator: '==', value });

/** A group, a set and a scope, each around `==` conditions on the same attribute: what each adds to a decision by `==`. */
export const STRUCTURE_CASES = [
  { name: 'any_of, second holds', item: { any_of: [[ip('10.0.0.1')], [ip('10.20.3.4')]] } },
  { name: 'none_of, two alternatives', item: { none_of: [[ip('10.0.0.1')], [ip('10.0.0.2')]] } },
  { name: 'a condition set', item: { set: 'office' }, policy: { condition_sets: { office: [ip('10.20.3.4')] } } },
  { name: 'scoped to a type', item: ip('10.20.3.4'), policy: { resource_types: ['document'] } },
] as const satisfies readonly { name: string; item: ConditionItem; policy?: Partial<Policy> }[];

/** Decisions per second of one allow rule whose one context condition is `item`, on `requests` (which it must allow). */
function oneConditionRate(name: string, item: ConditionItem, requests: DecisionRequest[], roundMillis: number, policy: Partial<Policy> = {}): number {
  const rule = { name: 'r', effect: 'allow' as const, principal_conditions: [], resource_conditions: [], context_conditions: [item], actions: ['read'] };
  const snapshot = compile([{ version: '1.0', name: 'p', description: null, default_effect: 'deny', rules: [rule], ...policy }], 1);
  let allowed = 0;
  const rate = bestRate(() => {
    for (const request of requests) if (evaluate(snapshot, request).allowed) allowed++;
    return requests.length;
  }, roundMillis);
  if (allowed === 0) throw new Error(`the ${name} case allowed nothing`);
  return rate;
}

/** 1024 checks of `read` on a document whose context holds `key` (each its own value when `attribute` is a function). */
const contextRequests = (key: string, attribute: unknown): DecisionRequest[] =>
  Array.from({ length: 1024 }, (_, index) => ({
    principal: { uri: undefined, attributes: new Map() },
    resource: { uri: 'document:1', attributes: new Map() },
    action: 'read',
    context: new Map([[key, typeof attribute === 'function' ? attribute(index) : attribute]]),
  }));

type CaseName = (typeof OPERATOR_CASES)[number]['name'] | (typeof STRUCTURE_CASES)[number]['name'];

/** Decisions per second of one allow rule whose one context condition is each case, on requests that match it. */
export function engineOperatorRates(roundMillis = 400): Record<CaseName, number> {
  const rates: Record<string, number> = {};
  for (const { name, path, operator, value, attribute } of OPERATOR_CASES) {
    rates[name] = oneConditionRate(name, { path, operator, value: value as unknown }, contextRequests(path.slice('attributes.'.length), attribute), roundMillis);
  }
  for (const { name, item, ...rest } of STRUCTURE_CASES) {
    rates[name] = oneConditionRate(name, item as ConditionItem, contextRequests('ip', '10.20.3.4'), roundMillis, 'policy' in rest ? (rest.policy as Partial<Policy>) : {});
  }
  return rates as Record<CaseName, number>;
}

/**
 * Checks per second of the engine alone, and of the engine with attribute schemas enforced (reject)
 * on every check first, on the requests of engineDecisionsPerSecond at 10 policies: what schemas add
 * to a check, beside what deciding it costs.
 */
/** Checks of `requests` per second (the best round), each of which `check` must allow: a denial means the benchmark's policies do not match its requests. */
function allowedPerSecond(requests: readonly DecisionRequest[], check: (request: DecisionRequest) => boolean, roundMillis: number): number {
  return bestRate(() => {
    for (const request of requests) if (!check(request)) throw new Error('a benchmark check was denied: its policies do not match its requests');
    return requests.length;
  }, roundMillis);
}

export function engineSchemaRates(roundMillis = 400): { without: number; withSchemas: number } {
  const snapshot = compile(keyedPolicies(10), 1);
  const requests = keyedRequests(10, 1024);
  const schemas = new RequestSchemas({
    document: {
      principal: { attributes: { type: 'object', properties: { role: { enum: ['reader', 'writer', 'admin'] } }, required: ['role'] } },
      resource: { attributes: { type: 'object', properties: { id: { type: 'string', minLength: 1 }, kind: { type: 'string' } }, required: ['id'] } },
    },
    enforcement: 'reject',
  });
  return {
    without: allowedPerSecond(requests, (request) => evaluate(snapshot, request).allowed, roundMillis),
    withSchemas: allowedPerSecond(requests, (request) => schemas.enforce(request).length === 0 && evaluate(snapshot, request).allowed, roundMillis),
  };
}

/**
 * Checks per second, engine alone, at 100 policies: decided by the live policies, and decided by
 * them and then by a shadow set (one policy in place of another, agreeing) as every check on the
 * front is while a shadow is written: what a shadow policy adds to a check.
 */
export function engineShadowRates(roundMillis = 400): { live: number; shadowed: number } {
  const policies = keyedPolicies(100);
  const live = compile(policies, 1);
  const shadowSnapshot = compile([{ ...policies[0]!, name: 'grant-0-next', shadow: 'grant-0' }, ...policies.slice(1)], 1);
  const shadows = new ShadowDecisions({ current: live, shadow: shadowSnapshot } as unknown as PolicySnapshots, new Metrics(), 100, {}, systemClock);
  const requests = keyedRequests(100, 1024);
  return {
    live: allowedPerSecond(requests, (request) => evaluate(live, request).allowed, roundMillis),
    shadowed: allowedPerSecond(
      requests,
      (request) => {
        const decision = evaluate(live, request);
        shadows.observe(request, decision);
        return decision.allowed;
      },
      roundMillis,
    ),
  };
}

/**
 * Milliseconds to make an impact preview's proposed set at `count` policies when one policy changes:
 * derived from the set in force (as the preview does) and compiled whole (as it did); medians of 5.
 */
export function proposedSetMillis(count = 10_000): { derived: number; compiled: number } {
  const policies = keyedPolicies(count);
  const current = compile(policies, 1);
  const middle = Math.floor(count / 2);
  const timed = (make: (round: number) => unknown) => {
    const times = Array.from({ length: 5 }, (_, round) => {
      const started = performance.now();
      make(round);
      return performance.now() - started;
    });
    return times.sort((a, b) => a - b)[2]!;
  };
  const changed = (round: number) => ({ ...policies[middle]!, rules: [{ ...policies[middle]!.rules[0]!, name: `changed-${round}` }] });
  return {
    derived: timed((round) => derive(current, [{ name: policies[middle]!.name, now: { policy: changed(round), position: current.positions[middle]! } }], 1)),
    compiled: timed((round) => compile(policies.map((policy, index) => (index === middle ? changed(round) : policy)), 1)),
  };
}
