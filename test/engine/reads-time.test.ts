import t from 'tap';
import { readsDecisionTime } from '../../src/engine/reads-time.js';
import type { ConditionItem, Policy } from '../../src/schemas/policy.js';

const policyWith = (side: 'principal_conditions' | 'resource_conditions' | 'action_conditions' | 'context_conditions', item: ConditionItem, extra: Partial<Policy> = {}): Policy => ({
  version: '1.0',
  name: 'p',
  description: null,
  default_effect: 'deny',
  rules: [{ name: 'r', description: null, effect: 'allow', principal_conditions: [], resource_conditions: [], [side]: [item], actions: ['read'] }],
  ...extra,
});

t.test('a policy reads the decision time by a context condition on time, a reference to context.time, or a within without an anchor of its own', async (t) => {
  const reading: [string, Policy][] = [
    ['context time', policyWith('context_conditions', { path: 'time', operator: 'after', value: '2026-01-01T00:00:00Z' })],
    ['a reference to it', policyWith('resource_conditions', { path: 'attributes.expires', operator: 'after', value_from: 'context.time' })],
    ['within, anchored on the decision time', policyWith('principal_conditions', { path: 'attributes.seen', operator: 'within', value: { last: 'PT1H' } })],
    ['in a group', policyWith('context_conditions', { any_of: [[{ path: 'time', operator: 'during', value: { zone: 'UTC', days: ['mon'] } }]] })],
    ['in a condition set', policyWith('principal_conditions', { set: 'fresh' }, { condition_sets: { fresh: [{ path: 'attributes.seen', operator: 'within', value: { next: 'PT1H' } }] } })],
  ];
  for (const [name, policy] of reading) t.equal(readsDecisionTime([policy]), true, name);
  const notReading: [string, Policy][] = [
    ['a context attribute', policyWith('context_conditions', { path: 'attributes.time', operator: '==', value: 1 })],
    ['before a written date-time', policyWith('resource_conditions', { path: 'attributes.expires', operator: 'before', value: '2030-01-01T00:00:00Z' })],
    ['within a written anchor', policyWith('principal_conditions', { path: 'attributes.seen', operator: 'within', value: { last: 'PT1H', of: '2026-01-01T00:00:00Z' } })],
    ['within an anchor of the resource', policyWith('principal_conditions', { path: 'attributes.seen', operator: 'within', value: { last: 'PT1H' }, value_from: 'resource.attributes.at' })],
    ['a principal attribute named time', policyWith('principal_conditions', { path: 'attributes.time', operator: 'exists' })],
  ];
  for (const [name, policy] of notReading) t.equal(readsDecisionTime([policy]), false, name);
});
