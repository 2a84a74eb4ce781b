import t from 'tap';
import { placeIssues } from '../../dashboard/src/issues.js';
import { draftFieldKeys, draftFromPolicy, emptyCondition, emptyPolicy, policyFromDraft, policyMatches } from '../../dashboard/src/policy-draft.js';
import { parseAttributes } from '../../dashboard/src/json-text.js';

const POLICY = {
  version: '1.0',
  name: 'it-desk',
  description: 'IT staff administer laptops',
  rules: [
    {
      name: 'it-admins',
      description: 'Only the IT department',
      effect: 'allow',
      principal_conditions: [{ path: 'attributes.department', operator: '==', value: 'it' }],
      resource_conditions: [{ path: 'attributes.level', operator: 'gte', value: 3 }],
      actions: ['administer', 'read'],
    },
  ],
  default_effect: 'deny',
};

t.test('a policy survives the editor: values shown as JSON text come back with their JSON types', async (t) => {
  const draft = draftFromPolicy(POLICY);
  t.equal(draft.rules[0]!.principal_conditions[0]!.value, '"it"');
  t.equal(draft.rules[0]!.resource_conditions[0]!.value, '3');
  t.equal(draft.rules[0]!.actions, 'administer, read');
  t.equal(draft.rules[0]!.description, 'Only the IT department');
  const { version: _, ...sent } = POLICY;
  t.strictSame(policyFromDraft(draft), { ok: true, policy: sent });
});

t.test('an empty description, of the policy or of a rule, is sent as null; a rule without one shows empty', async (t) => {
  const withoutDescriptions = { ...POLICY, description: null, rules: [{ ...POLICY.rules[0]!, description: undefined }] };
  const draft = draftFromPolicy(withoutDescriptions);
  t.equal(draft.description, '');
  t.equal(draft.rules[0]!.description, '');
  draft.rules[0]!.description = '   ';
  const converted = policyFromDraft(draft);
  t.equal(converted.ok && converted.policy.description, null);
  t.equal(converted.ok && converted.policy.rules[0]!.description, null);
  t.ok(draftFieldKeys(draft).includes('rules.0.description'), 'a server message about it lands on its field');
});

t.test('exists and not_exists: shown with an empty value, sent without one', async (t) => {
  const presence = { ...POLICY, rules: [{ ...POLICY.rules[0]!, principal_conditions: [{ path: 'attributes.badge', operator: 'exists' }, { path: 'attributes.banned', operator: 'not_exists' }] }] };
  const draft = draftFromPolicy(presence);
  t.same(draft.rules[0]!.principal_conditions.map((condition) => condition.value), ['', '']);
  draft.rules[0]!.principal_conditions[0]!.value = 'left over from another operator';
  const { version: _, ...sent } = presence;
  t.strictSame(policyFromDraft(draft), { ok: true, policy: sent });
});

t.test('a group survives the editor as JSON text; text that does not parse is flagged at its place', async (t) => {
  const group = { none_of: [[{ path: 'attributes.role', operator: '==', value: 'admin' }], [{ path: 'uri', operator: '==', value_from: 'resource.attributes.owner' }]] };
  const grouped = { ...POLICY, rules: [{ ...POLICY.rules[0]!, principal_conditions: [group, ...POLICY.rules[0]!.principal_conditions] }] };
  const draft = draftFromPolicy(grouped);
  t.same(JSON.parse(draft.rules[0]!.principal_conditions[0]!.group!), group, 'shown as its JSON');
  t.equal(draft.rules[0]!.principal_conditions[1]!.group, undefined, 'a condition beside it stays a condition');
  const { version: _, ...sent } = grouped;
  t.strictSame(policyFromDraft(draft), { ok: true, policy: sent });
  draft.rules[0]!.principal_conditions[0]!.group = '{"any_of": [[';
  const converted = policyFromDraft(draft);
  t.equal(converted.ok, false);
  t.same(Object.keys(!converted.ok ? converted.errors : {}), ['rules.0.principal_conditions.0']);
  t.ok(draftFieldKeys(draft).includes('rules.0.principal_conditions.0'), "the server's messages about it land there too");
});

t.test("a policy's resource types survive the editor as a comma-separated field; none, none is sent", async (t) => {
  const scoped = { ...POLICY, resource_types: ['document', 'folder'] };
  const draft = draftFromPolicy(scoped);
  t.equal(draft.resource_types, 'document, folder');
  const { version: _, ...sent } = scoped;
  const converted = policyFromDraft(draft);
  t.same(converted, { ok: true, policy: sent });
  draft.resource_types = ' , ';
  const unscoped = policyFromDraft(draft);
  t.equal(unscoped.ok && 'resource_types' in unscoped.policy, false, 'blank: the policy speaks for every resource');
  t.ok(draftFieldKeys(draft).includes('resource_types'));
});

t.test("a policy's condition sets and the references to them survive the editor as JSON text", async (t) => {
  const sets = { manager: [{ path: 'attributes.role', operator: '==', value: 'manager' }] };
  const withSets = { ...POLICY, condition_sets: sets, rules: [{ ...POLICY.rules[0]!, principal_conditions: [{ set: 'manager' }] }] };
  const draft = draftFromPolicy(withSets);
  t.same(JSON.parse(draft.condition_sets), sets);
  t.same(JSON.parse(draft.rules[0]!.principal_conditions[0]!.group!), { set: 'manager' }, 'a reference is held as JSON, as a group is');
  const { version: _, ...sent } = withSets;
  t.same(policyFromDraft(draft), { ok: true, policy: sent });
  draft.condition_sets = '{"manager": [';
  const converted = policyFromDraft(draft);
  t.same(Object.keys(!converted.ok ? converted.errors : {}), ['condition_sets'], 'text that does not parse is flagged at its field');
  t.equal(draftFromPolicy(POLICY).condition_sets, '', 'a policy without sets shows none');
});

t.test('a new policy has no blank condition to trip over: it converts as it is', async (t) => {
  const draft = emptyPolicy();
  t.same([draft.rules[0]!.principal_conditions, draft.rules[0]!.resource_conditions], [[], []]);
  const converted = policyFromDraft(draft);
  t.equal(converted.ok, true, 'nothing is flagged before anything is typed');
});

t.test('a value that is not JSON is reported on its own field', async (t) => {
  const draft = emptyPolicy();
  draft.rules[0]!.principal_conditions.push({ ...emptyCondition(), value: 'it' });
  draft.rules[0]!.resource_conditions.push({ ...emptyCondition(), value: '"laptop"' });
  const converted = policyFromDraft(draft);
  t.equal(converted.ok, false);
  if (!converted.ok) t.same(Object.keys(converted.errors), ['rules.0.principal_conditions.0.value']);
});

t.test('server messages go to the field their loc names, or to the nearest shown field holding it', async (t) => {
  const fields = draftFieldKeys(draftFromPolicy(POLICY));
  const placed = placeIssues(
    [
      { loc: ['body', 'rules', 0, 'principal_conditions', 0, 'operator'], msg: 'must be one of: "=="' },
      { loc: ['body', 'rules', 0, 'actions'], msg: 'must NOT have fewer than 1 items' },
      { loc: ['body', 'rules', 0, 'resource_conditions', 0, 'value', 'deep'], msg: 'odd' },
      { loc: ['query', 'name'], msg: 'no letters' },
      { loc: ['body', 'surprise'], msg: 'Extra inputs are not permitted' },
    ],
    fields,
  );
  t.same(placed.byField, {
    'rules.0.principal_conditions.0.operator': 'must be one of: "=="',
    'rules.0.actions': 'must NOT have fewer than 1 items',
    'rules.0.resource_conditions.0.value': 'odd',
    name: 'no letters',
  });
  t.same(placed.unplaced, ['surprise: Extra inputs are not permitted']);
});

t.test('search matches names, descriptions, rule names and actions, ignoring case', async (t) => {
  t.ok(policyMatches(POLICY, 'LAPTOPS'));
  t.ok(policyMatches(POLICY, 'administer'));
  t.notOk(policyMatches(POLICY, 'hr'));
});

t.test('attributes are a JSON object; empty text is none', async (t) => {
  t.same(parseAttributes('{"department": "it"}'), { ok: true, value: { department: 'it' } });
  t.same(parseAttributes('  '), { ok: true, value: undefined });
  t.equal(parseAttributes('["it"]').ok, false);
  t.equal(parseAttributes('{department: it}').ok, false);
});

t.test('relations, action and context conditions survive the editor; a policy without them is sent without them', async (t) => {
  const relational = {
    name: 'documents',
    description: null,
    rules: [
      {
        name: 'owner-deletes-softly',
        description: null,
        effect: 'allow',
        principal_conditions: [],
        resource_conditions: [{ path: 'attributes.ownerID', operator: '==', value_from: 'principal.attributes.email' }],
        action_conditions: [{ path: 'attributes.soft', operator: '==', value: true }],
        context_conditions: [{ path: 'attributes.ip', operator: 'startswith', value_from: 'principal.attributes.subnet' }],
        actions: ['delete'],
      },
    ],
    default_effect: 'deny',
  };
  const draft = draftFromPolicy(relational);
  t.match(draft.rules[0]!.resource_conditions[0], { comparedWith: 'another attribute', valueFrom: 'principal.attributes.email' });
  t.match(draft.rules[0]!.action_conditions[0], { comparedWith: 'value', value: 'true' });
  t.strictSame(policyFromDraft(draft), { ok: true, policy: relational });
  t.ok(draftFieldKeys(draft).includes('rules.0.resource_conditions.0.value_from'), 'a server message about a reference lands on its field');

  const plain = policyFromDraft(draftFromPolicy(POLICY));
  t.ok(plain.ok && !('action_conditions' in plain.policy.rules[0]!) && !('context_conditions' in plain.policy.rules[0]!), 'no empty lists added to a policy written without them');
  const switched = draftFromPolicy(POLICY);
  switched.rules[0]!.principal_conditions[0]!.comparedWith = 'another attribute';
  switched.rules[0]!.principal_conditions[0]!.valueFrom = 'context.attributes.department';
  const sent = policyFromDraft(switched);
  t.strictSame(sent.ok && sent.policy.rules[0]!.principal_conditions[0], { path: 'attributes.department', operator: '==', value_from: 'context.attributes.department' }, 'the value typed before is not sent beside the reference');

  const beforeExpiry = { path: 'time', operator: 'within', value: { last: 'P1D' }, value_from: 'resource.attributes.expires' };
  const anchored = { ...relational, rules: [{ ...relational.rules[0]!, context_conditions: [beforeExpiry] }] };
  const anchoredDraft = draftFromPolicy(anchored);
  t.match(anchoredDraft.rules[0]!.context_conditions[0], { comparedWith: 'another attribute', value: '{"last":"P1D"}', valueFrom: 'resource.attributes.expires' });
  t.strictSame(policyFromDraft(anchoredDraft), { ok: true, policy: anchored }, 'within keeps its span beside the reference that reads its anchor');
});
