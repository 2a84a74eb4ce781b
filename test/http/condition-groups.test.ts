import t from 'tap';
import { answers, decidesEachAndInBulk, emptyServer } from '../helpers/it-desk.js';
import { MAX_ALTERNATIVES } from '../../src/schemas/policy.js';

// Condition groups over the API: "admins or the owner" as one deny exception (none_of) and as one
// allow (any_of), decided by checks, bulks (front and pool) and AuthZEN; what explanations say of
// them, what plans make of them, what writes refuse, and how answers spell them.

const ADMIN = [{ path: 'attributes.role', operator: '==', value: 'admin' }];
const OWNER = [{ path: 'uri', operator: '==', value_from: 'resource.attributes.owner' }];

/** Archived documents are not edited but by admins or their owner; editors, admins and owners edit the others. */
const DOCUMENTS = {
  name: 'documents',
  rules: [
    {
      name: 'archived',
      effect: 'deny',
      principal_conditions: [{ none_of: [ADMIN, OWNER] }],
      resource_conditions: [{ path: 'attributes.status', operator: '==', value: 'archived' }],
      actions: ['edit'],
    },
    {
      name: 'editors',
      effect: 'allow',
      principal_conditions: [{ any_of: [[{ path: 'attributes.role', operator: '==', value: 'editor' }], ADMIN, OWNER] }],
      actions: ['edit'],
    },
  ],
};

const ARCHIVED = { allowed: false, reason: 'Rule archived denied the action in policy documents' };
const EDITS = { allowed: true, reason: 'Rule editors allowed the action in policy documents' };
const DENIED = { allowed: false, reason: 'Action denied by default effect' };

const edit = (principal: { uri?: string; attributes: Record<string, unknown> }, status: string) => ({
  principal,
  resource: { attributes: { status, owner: 'user:alice' } },
  action: 'edit',
});

t.test('admins or the owner: one deny exception and one allow, decided alike by checks, bulks and AuthZEN', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await emptyServer(t, { evaluation, workers: 1 });
    t.equal((await server.call('POST', '/admin/policies', DOCUMENTS)).status, 200);
    const cases: [ReturnType<typeof edit>, unknown, string][] = [
      [edit({ uri: 'user:bob', attributes: { role: 'editor' } }, 'archived'), ARCHIVED, 'an editor on an archived document'],
      [edit({ uri: 'user:bob', attributes: { role: 'admin' } }, 'archived'), EDITS, 'an admin'],
      [edit({ uri: 'user:alice', attributes: {} }, 'archived'), EDITS, 'the owner'],
      [edit({ attributes: { team: 'sales' } }, 'archived'), ARCHIVED, 'someone with neither a role nor a uri is not exempted'],
      [edit({ uri: 'user:bob', attributes: { role: 'editor' } }, 'draft'), EDITS, 'an editor on a draft'],
      [edit({ uri: 'user:bob', attributes: { role: 'reader' } }, 'draft'), DENIED, 'a reader on a draft: no alternative holds'],
    ];
    await decidesEachAndInBulk(t, server, cases, evaluation);
    const evaluationOf = (id: string, role: string) => ({
      subject: { type: 'user', id, properties: { role } },
      action: { name: 'edit' },
      resource: { type: 'document', id: '1', properties: { status: 'archived', owner: 'user:alice' } },
    });
    await answers(t, server, evaluationOf('bob', 'editor'), 200, { decision: false }, '/access/v1/evaluation', `${evaluation}: AuthZEN, an editor`);
    await answers(t, server, evaluationOf('bob', 'admin'), 200, { decision: true }, '/access/v1/evaluation', `${evaluation}: AuthZEN, an admin`);
  }
});

t.test('an explanation says why no alternative held, which one held, and which one exempted', async (t) => {
  const server = await emptyServer(t);
  t.equal((await server.call('POST', '/admin/policies', DOCUMENTS)).status, 200);
  const rulesOf = async (check: unknown) => (await server.call('POST', '/check?explain=true', check)).body.explain.policies[0].rules;

  const reader = await rulesOf(edit({ uri: 'user:bob', attributes: { role: 'reader' } }, 'draft'));
  t.same(reader[0].failed, { side: 'resource', path: 'attributes.status', operator: '==', expected: 'archived', actual: 'draft' });
  t.same(reader[1].failed, {
    side: 'principal',
    group: 'any_of',
    alternatives: [
      { path: 'attributes.role', operator: '==', expected: 'editor', actual: 'reader' },
      { path: 'attributes.role', operator: '==', expected: 'admin', actual: 'reader' },
      { path: 'uri', operator: '==', value_from: 'resource.attributes.owner', expected: 'user:alice', actual: 'user:bob' },
    ],
  }, 'each alternative with its first failing condition');

  const admin = await rulesOf(edit({ uri: 'user:bob', attributes: { role: 'admin' } }, 'archived'));
  t.same(admin[0], { name: 'archived', effect: 'deny', matched: false, failed: { side: 'principal', group: 'none_of', held: 0 } }, 'the exemption that held');
  t.same(admin[1], { name: 'editors', effect: 'allow', matched: true, alternatives_held: [{ side: 'principal', alternative: 1 }] }, 'the alternative that allowed');

  const owner = await rulesOf(edit({ uri: 'user:alice', attributes: {} }, 'archived'));
  t.same(owner[0].failed, { side: 'principal', group: 'none_of', held: 1 });
  t.same(owner[1].alternatives_held, [{ side: 'principal', alternative: 2 }]);
});

t.test('a plan states the groups it cannot decide and decides those on what it knows, with a MongoDB filter', async (t) => {
  const server = await emptyServer(t);
  t.equal((await server.call('POST', '/admin/policies', DOCUMENTS)).status, 200);
  const editor = await server.call('POST', '/plan', { principal: { uri: 'user:bob', attributes: { role: 'editor' } }, action: 'edit' });
  t.equal(editor.status, 200);
  t.same(
    editor.body.condition,
    { not: { and: [{ not: { path: 'attributes.owner', operator: '==', value: 'user:bob' } }, { path: 'attributes.status', operator: '==', value: 'archived' }] } },
    "an editor edits what is not archived, or archived and their own: the owner alternative read onto the resource",
  );
  const scalar = (value: string) => ({ $eq: value, $not: { $type: 'array' } });
  t.same(editor.body.mongodb, { $nor: [{ $nor: [{ 'attributes.owner': scalar('user:bob') }], 'attributes.status': scalar('archived') }] });

  const admin = await server.call('POST', '/plan', { principal: { uri: 'user:carol', attributes: { role: 'admin' } }, action: 'edit' });
  t.same([admin.body.kind, admin.body.condition], ['always_allowed', true], 'an admin: both groups decided by what is known');
});

t.test('writes refuse groups in groups, empty or too many alternatives and stray keys, naming where they are', async (t) => {
  const server = await emptyServer(t);
  const written = (item: unknown) => server.call('POST', '/admin/policies', { name: 'p', rules: [{ name: 'r', effect: 'allow', principal_conditions: [item], actions: ['read'] }] });
  const refusals: [unknown, string][] = [
    [{ any_of: [[{ any_of: [ADMIN] }]] }, 'body.rules.0.principal_conditions.0.any_of.0.0.any_of'],
    [{ any_of: [] }, 'body.rules.0.principal_conditions.0.any_of'],
    [{ none_of: [[]] }, 'body.rules.0.principal_conditions.0.none_of.0'],
    [{ any_of: Array(MAX_ALTERNATIVES + 1).fill(ADMIN) }, 'body.rules.0.principal_conditions.0.any_of'],
    [{ any_of: [ADMIN], none_of: [OWNER] }, 'body.rules.0.principal_conditions.0.none_of'],
    [{ any_of: [[{ path: 'attributes.role', operator: 'in', value: 'admin' }]] }, 'body.rules.0.principal_conditions.0.any_of.0.0.value'],
  ];
  for (const [item, location] of refusals) {
    const response = await written(item);
    t.equal(response.status, 422, JSON.stringify(item).slice(0, 80));
    t.equal(response.body.detail?.[0]?.loc?.join('.'), location, `${JSON.stringify(item).slice(0, 60)}: ${response.body.detail?.[0]?.msg}`);
  }
  const many = { any_of: Array.from({ length: 5 }, () => Array(60).fill(ADMIN[0])) };
  const tooMany = await written(many);
  t.equal(tooMany.status, 422, 'conditions in groups count toward the limit on conditions per rule');
  t.match(tooMany.body.detail?.[0]?.msg, /at most 256 conditions/);
});

t.test('answers give groups as written, with operators in the server style, and policies without them byte for byte as before', async (t) => {
  const eunomia = await emptyServer(t, { operatorStyle: 'eunomia' });
  const created = await eunomia.call('POST', '/admin/policies', DOCUMENTS);
  t.equal(created.status, 200);
  t.same(created.body.rules[0].principal_conditions, [
    { none_of: [[{ path: 'attributes.role', operator: 'equals', value: 'admin' }], [{ path: 'uri', operator: 'equals', value_from: 'resource.attributes.owner' }]] },
  ]);
  const read = await eunomia.call('GET', '/admin/policies/documents');
  t.same(read.body, created.body, 'read back as written');

  const plain = { name: 'plain', rules: [{ name: 'r', effect: 'allow', principal_conditions: ADMIN, resource_conditions: [], actions: ['read'] }] };
  const server = await emptyServer(t);
  const stored = await server.call('POST', '/admin/policies', plain);
  t.equal(
    JSON.stringify(stored.body),
    '{"version":"1.0","name":"plain","description":null,"rules":[{"name":"r","description":null,"effect":"allow","principal_conditions":[{"path":"attributes.role","operator":"==","value":"admin"}],"resource_conditions":[],"actions":["read"]}],"default_effect":"deny"}',
  );
});
