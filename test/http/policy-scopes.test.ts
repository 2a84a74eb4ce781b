import t from 'tap';
import { answers, decides, decidesEachAndInBulk, emptyServer } from '../helpers/it-desk.js';
import { MAX_RESOURCE_TYPES } from '../../src/schemas/policy.js';

// Policies scoped to resource types over the API: whose rules and whose default effect speak for a
// check, what a check on a type no policy covers is answered, what explanations and plans say, and
// what writes refuse.

/** Editors edit documents; nothing else on documents (deny default). */
const DOCUMENTS = {
  name: 'documents',
  resource_types: ['document'],
  rules: [{ name: 'editors', effect: 'allow', principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'editor' }], actions: ['edit'] }],
  default_effect: 'deny',
};
/** Anyone does anything with folders and images (allow default). */
const OPEN_FOLDERS = { name: 'folders', resource_types: ['folder', 'image'], rules: [], default_effect: 'allow' };

const editOf = (uri: string | undefined, role = 'reader') => ({ principal: { attributes: { role } }, resource: uri === undefined ? { attributes: { kind: 'x' } } : { uri }, action: 'edit' });

const EDITED = { allowed: true, reason: 'Rule editors allowed the action in policy documents' };
const DEFAULT_DENY = { allowed: false, reason: 'Action denied by default effect' };
const DEFAULT_ALLOW = { allowed: true, reason: 'Action allowed by default effect' };
const NO_IMAGE_POLICY = { allowed: false, reason: "Action denied by default: no policy covers resources of type 'video'" };
const UNTYPED = { allowed: false, reason: 'Action denied by default: every policy is scoped to resource types, and the resource has none (no uri of the form <type>:<id>)' };

t.test("a scoped policy's rules and default speak only for its types; a type no policy covers is denied, saying so", async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await emptyServer(t, { evaluation, workers: 1 });
    for (const policy of [DOCUMENTS, OPEN_FOLDERS]) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
    const cases: [ReturnType<typeof editOf>, unknown, string][] = [
      [editOf('document:1', 'editor'), EDITED, 'an editor on a document'],
      [editOf('document:1'), DEFAULT_DENY, "a reader on a document: the documents' deny default"],
      [editOf('folder:1'), DEFAULT_ALLOW, "a folder: only the folders' allow default speaks"],
      [editOf('image:7'), DEFAULT_ALLOW, 'an image: the second type of the same policy'],
      [editOf('video:1', 'editor'), NO_IMAGE_POLICY, 'a video: no policy covers it'],
      [editOf(undefined, 'editor'), UNTYPED, 'a resource with no uri has no type'],
      [editOf('documents'), UNTYPED, 'nor one whose uri has no colon'],
    ];
    await decidesEachAndInBulk(t, server, cases, evaluation);
    const evaluationOf = (type: string) => ({ subject: { type: 'user', id: 'bob', properties: { role: 'reader' } }, action: { name: 'edit' }, resource: { type, id: '1' } });
    await answers(t, server, evaluationOf('document'), 200, { decision: false }, '/access/v1/evaluation', `${evaluation}: AuthZEN, a document`);
    await answers(t, server, evaluationOf('folder'), 200, { decision: true }, '/access/v1/evaluation', `${evaluation}: AuthZEN, a folder`);

    // An unscoped policy speaks for every check: its deny default now denies folders too.
    t.equal((await server.call('POST', '/admin/policies', { name: 'everything', rules: [] })).status, 200);
    await decides(t, server, editOf('folder:1'), DEFAULT_DENY, '/check', `${evaluation}: an unscoped deny default speaks for every type`);
    await decides(t, server, editOf('video:1'), DEFAULT_DENY, '/check', `${evaluation}: and for types no scoped policy covers`);
  }
});

t.test('an explanation names the policy whose default spoke for the type, and why the rules of another did not match', async (t) => {
  const server = await emptyServer(t);
  for (const policy of [DOCUMENTS, OPEN_FOLDERS]) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
  const folder = (await server.call('POST', '/check?explain=true', editOf('folder:1', 'editor'))).body.explain;
  t.same(folder.decided_by, {
    kind: 'default',
    effect: 'allow',
    why: "No rule for action 'edit' matched in the policies with rules for it (documents); so the default effects decide: none of the policies that speak for resources of type 'folder' has default_effect deny, and policy folders is the first with default_effect allow",
    policy: 'folders',
  });
  t.same(folder.policies[0].rules[0].failed, { side: 'resource', path: 'uri', operator: 'startswith', expected: 'document:', actual: 'folder:1' }, "the documents' rule is out of scope");
  const document = (await server.call('POST', '/check?explain=true', editOf('document:1'))).body.explain.decided_by;
  t.same([document.policy, document.effect], ['documents', 'deny'], "a document's denial is the documents' default, not another policy's");
  const video = (await server.call('POST', '/check?explain=true', editOf('video:1'))).body.explain.decided_by;
  t.match(video.why, /every policy is scoped to resource types this resource is not of/);
});

t.test('a plan states the types whose defaults allow, and the scope of the rules, with a MongoDB filter', async (t) => {
  const server = await emptyServer(t);
  for (const policy of [DOCUMENTS, OPEN_FOLDERS]) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
  const startsWith = (value: string) => ({ path: 'uri', operator: 'startswith', value });
  const reader = await server.call('POST', '/plan', { principal: { attributes: { role: 'reader' } }, action: 'edit' });
  t.same(reader.body.condition, { or: [startsWith('folder:'), startsWith('image:')] }, 'a reader edits folders and images');
  const prefixed = (pattern: string) => ({ uri: { $regex: pattern, $not: { $type: 'array' } } });
  t.same(reader.body.mongodb, { $or: [prefixed('^folder:'), prefixed('^image:')] });
  const editor = await server.call('POST', '/plan', { principal: { attributes: { role: 'editor' } }, action: 'edit' });
  t.same(editor.body.condition, { or: [startsWith('document:'), startsWith('folder:'), startsWith('image:')] }, 'an editor documents too');
});

t.test('writes refuse a type with a colon, no types, a type twice and too many, naming where; answers give the types last', async (t) => {
  const server = await emptyServer(t);
  const written = (types: unknown) => server.call('POST', '/admin/policies', { name: 'p', resource_types: types, rules: [] });
  const refusals: [unknown, string][] = [
    [['document:'], 'body.resource_types.0'],
    [[], 'body.resource_types'],
    [['a', 'a'], 'body.resource_types'],
    [Array.from({ length: MAX_RESOURCE_TYPES + 1 }, (_, index) => `t${index}`), 'body.resource_types'],
    [[''], 'body.resource_types.0'],
    ['document', 'body.resource_types'],
  ];
  for (const [types, location] of refusals) {
    const response = await written(types);
    t.equal(response.status, 422, JSON.stringify(types).slice(0, 60));
    t.equal(response.body.detail?.[0]?.loc?.join('.'), location, `${JSON.stringify(types).slice(0, 40)}: ${response.body.detail?.[0]?.msg}`);
  }
  const stored = await server.call('POST', '/admin/policies', DOCUMENTS);
  t.same(Object.keys(stored.body), ['version', 'name', 'description', 'rules', 'default_effect', 'resource_types'], 'after the fields every policy has');
  t.same((await server.call('GET', '/admin/policies/documents')).body, stored.body, 'read back as written');
});

t.test('a global deny without touching any default: a policy of default_effect none states its rules and changes nothing else', async (t) => {
  const suspended = {
    name: 'suspended',
    rules: [{ name: 'suspended users do nothing', effect: 'deny', principal_conditions: [{ path: 'attributes.suspended', operator: '==', value: true }], actions: ['*'] }],
    default_effect: 'none',
  };
  for (const evaluation of ['inline', 'pool'] as const) {
    const server = await emptyServer(t, { evaluation, workers: 1 });
    for (const policy of [suspended, DOCUMENTS, OPEN_FOLDERS]) t.equal((await server.call('POST', '/admin/policies', policy)).status, 200);
    const suspendedEditor = { ...editOf('folder:1'), principal: { attributes: { role: 'editor', suspended: true } } };
    await decidesEachAndInBulk(
      t,
      server,
      [
        [editOf('folder:1'), DEFAULT_ALLOW, "a folder: the folders' allow default still speaks, the baseline has none to add"],
        [editOf('document:1', 'editor'), EDITED, 'an editor edits a document'],
        [editOf('document:1'), DEFAULT_DENY, "a reader does not: the documents' deny default"],
        [editOf('video:1'), DEFAULT_DENY, 'a type only the baseline speaks for: nothing allows it, so denied'],
        [suspendedEditor, { allowed: false, reason: 'Rule suspended-users-do-nothing denied the action in policy suspended' }, 'a suspended user does nothing, anywhere'],
      ],
      evaluation,
    );
    const plan = await server.call('POST', '/plan', { principal: { attributes: { role: 'reader' } }, action: 'edit' });
    t.same(
      plan.body.condition,
      { or: [{ path: 'uri', operator: 'startswith', value: 'folder:' }, { path: 'uri', operator: 'startswith', value: 'image:' }] },
      `${evaluation}: the plan allows what the folders' default allows, and nothing more`,
    );
    const explained = await server.call('POST', '/check?explain=true', editOf('video:1'));
    t.match(explained.body.explain.decided_by.why, /none of the policies that speak for resources of type 'video' has a default effect of its own \(each is default_effect none\), so it is denied/);
    t.equal((await server.call('GET', '/admin/policies/suspended')).body.default_effect, 'none');
  }
});
