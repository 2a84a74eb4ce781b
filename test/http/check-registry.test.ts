import t from 'tap';
import { ALLOWED_ADMIN, ALLOWED_WIPE, DENIED, NO_POLICIES, conflict, createPolicy, decides, emptyServer, eq, itServer, refuses, register } from '../helpers/it-desk.js';

// A check's attributes against the registry's: what an unregistered uri gives, when supplied and
// registered values conflict, and that values keep their JSON types and keys stay plain keys.

t.test('an unregistered uri contributes nothing and is not an error', async (t) => {
  const server = await itServer(t);
  await decides(
    t,
    server,
    { principal: { uri: 'user:nobody', attributes: { department: 'it' } }, resource: { uri: 'laptop:unknown', attributes: { kind: 'laptop' } }, action: 'administer' },
    ALLOWED_ADMIN,
  );
  await decides(t, server, { principal: { uri: 'user:nobody' }, resource: { uri: 'laptop:unknown' }, action: 'administer' }, DENIED);
  await decides(t, await emptyServer(t), { principal_uri: 'a', resource_uri: 'b' }, { allowed: false, reason: NO_POLICIES }, '/check', 'no policies');
});

t.test('a supplied value that contradicts the registry is a conflict; equal values are fine', async (t) => {
  const server = await itServer(t);
  const bobInIt = { principal: { uri: 'user:bob', attributes: { department: 'it' } }, resource: { uri: 'laptop-1' }, action: 'administer' };
  await refuses(t, server, bobInIt, conflict('user:bob', 'department'));
  await refuses(t, server, { principal_uri: 'user:alice', resource_uri: 'desk-1', resource_attributes: { kind: 'laptop' }, action: 'administer' }, conflict('desk-1', 'kind'));
  await refuses(t, server, { ...bobInIt, principal: { uri: 'user:bob', attributes: [{ key: 'department', value: 'it' }] } }, conflict('user:bob', 'department'), '/check', 'the list form');
  await decides(
    t,
    server,
    { principal: { uri: 'user:alice', attributes: { department: 'it', role: 'admin' } }, resource: { uri: 'laptop-1', attributes: { kind: 'laptop' } }, action: 'wipe' },
    ALLOWED_WIPE,
  );
  await refuses(t, server, bobInIt, conflict('user:bob', 'department'), '/check-access', '/check-access reports it the same way');
});

t.test('conflicts compare JSON values, structured values included', async (t) => {
  const server = await emptyServer(t);
  await register(server, 'svc:1', 'principal', { level: 3, tags: ['a', 'b'], address: { city: 'Oslo', zip: '0150' } });
  const checkOf = (attributes: unknown) => ({ principal: { uri: 'svc:1', attributes }, resource: { uri: 'r' } });
  await decides(t, server, checkOf({ level: 3, tags: ['a', 'b'], address: { zip: '0150', city: 'Oslo' } }), { allowed: false, reason: NO_POLICIES }, '/check', 'equal, keys in another order');
  await refuses(t, server, checkOf({ level: '3' }), conflict('svc:1', 'level'), '/check', 'another type');
  await refuses(t, server, checkOf({ tags: ['b', 'a'] }), conflict('svc:1', 'tags'), '/check', 'another order of a list');
  await refuses(t, server, checkOf({ level: null }), conflict('svc:1', 'level'), '/check', 'null');
});

t.test('rule 8: supplied attributes do not make up for insufficient registered ones', async (t) => {
  const server = await itServer(t);
  // bob (sales) fails the IT desk policy; adding attributes that do not qualify changes nothing.
  for (const attributes of [{ role: 'admin' }, { title: 'boss', clearance: 'top' }, [{ key: 'role', value: 'admin' }]]) {
    for (const action of ['wipe', 'administer']) await decides(t, server, { principal: { uri: 'user:bob', attributes }, resource: { uri: 'laptop-1' }, action }, DENIED);
  }
  // And the one attribute that would qualify cannot be supplied: it contradicts the registry.
  await refuses(t, server, { principal: { uri: 'user:bob', attributes: { department: 'it' } }, resource: { uri: 'laptop-1' }, action: 'administer' }, conflict('user:bob', 'department'));
});

t.test('values keep their JSON types (1 is not "1")', async (t) => {
  const server = await emptyServer(t);
  await createPolicy(server, {
    name: 'typed',
    rules: [
      { name: 'number', effect: 'allow', principal_conditions: [eq('level', 1)], actions: ['n'] },
      { name: 'string', effect: 'allow', principal_conditions: [eq('level', '1')], actions: ['s'] },
      { name: 'boolean', effect: 'allow', principal_conditions: [eq('flag', true)], actions: ['b'] },
      { name: 'null', effect: 'allow', principal_conditions: [eq('flag', null)], actions: ['z'] },
      { name: 'json-text', effect: 'allow', principal_conditions: [eq('doc', { a: 1 })], actions: ['o'] },
    ],
  });
  const allows = (rule: string) => ({ allowed: true, reason: `Rule ${rule} allowed the action in policy typed` });
  const cases: [attributes: Record<string, unknown>, action: string, decision: unknown][] = [
    [{ level: 1 }, 'n', allows('number')],
    [{ level: '1' }, 'n', DENIED],
    [{ level: 1.0 }, 'n', allows('number')],
    [{ level: '1' }, 's', allows('string')],
    [{ level: 1 }, 's', DENIED],
    [{ flag: true }, 'b', allows('boolean')],
    [{ flag: 'true' }, 'b', DENIED],
    [{ flag: 1 }, 'b', DENIED],
    [{ flag: null }, 'z', allows('null')],
    [{ flag: 'null' }, 'z', DENIED],
    [{ doc: { a: 1 } }, 'o', allows('json-text')],
    // A string holding JSON is not re-parsed.
    [{ doc: '{"a":1}' }, 'o', DENIED],
    [{ doc: { a: '1' } }, 'o', DENIED],
  ];
  for (const [attributes, action, decision] of cases) await decides(t, server, { principal: { attributes }, resource: { uri: 'r' }, action }, decision);

  // Registered values keep their types too.
  await register(server, 'n:1', 'principal', { level: 1 });
  await register(server, 's:1', 'principal', { level: '1' });
  await decides(t, server, { principal_uri: 'n:1', resource_uri: 'r', action: 'n' }, allows('number'));
  await decides(t, server, { principal_uri: 's:1', resource_uri: 'r', action: 'n' }, DENIED);
  await decides(t, server, { principal_uri: 's:1', resource_uri: 'r', action: 's' }, allows('string'));
});

t.test('__proto__, constructor and toString are ordinary attribute keys and never pollute', async (t) => {
  const server = await emptyServer(t);
  t.teardown(() => {
    delete (Object.prototype as Record<string, unknown>).polluted;
  });
  await createPolicy(server, {
    name: 'odd keys',
    rules: [
      { name: 'proto', effect: 'allow', principal_conditions: [{ path: 'attributes.__proto__.polluted', operator: '==', value: true }], actions: ['proto'] },
      { name: 'ctor', effect: 'allow', principal_conditions: [eq('constructor', 'x'), eq('toString', 'y')], actions: ['ctor'] },
      // Reading through a prototype would find Object.prototype.toString and satisfy `!=`.
      { name: 'inherited', effect: 'allow', principal_conditions: [{ path: 'attributes.toString', operator: '!=', value: 'zzz' }], actions: ['inherited'] },
      { name: 'nested-inherited', effect: 'allow', principal_conditions: [{ path: 'attributes.doc.constructor', operator: '!=', value: 'zzz' }], actions: ['nested-inherited'] },
    ],
  });
  const allows = (rule: string) => ({ allowed: true, reason: `Rule ${rule} allowed the action in policy odd-keys` });
  // Sent as text: an object literal's __proto__ would set the prototype rather than send the key.
  const sent = async (path: string, text: string) => {
    const response = await server.send('POST', path, text, { 'content-type': 'application/json' });
    return { status: response.status, body: response.body };
  };
  const decided = (body: unknown) => ({ status: 200, body });
  const untouched = () => t.same([({} as Record<string, unknown>).polluted, Object.hasOwn(Object.prototype, 'polluted')], [undefined, false], 'Object.prototype untouched');

  t.same(await sent('/check', '{"principal":{"attributes":{"__proto__":{"polluted":true}}},"resource":{"uri":"r"},"action":"proto"}'), decided(allows('proto')));
  untouched();
  // `__proto__` alone is a non-empty attributes object.
  t.same(await sent('/check', '{"principal_attributes":{"__proto__":{"polluted":true}},"resource_uri":"r","action":"proto"}'), decided(allows('proto')));
  t.same(await sent('/check', '{"principal":{"attributes":{"__proto__":{"polluted":false}}},"resource":{"uri":"r"},"action":"proto"}'), decided(DENIED));
  // A top-level __proto__ in the body is not a way in either: a field the check does not know.
  t.same(await sent('/check', '{"__proto__":{"polluted":true,"principal_uri":"p"},"principal":{"attributes":{"a":1}},"resource":{"uri":"r"}}'), {
    status: 422,
    body: { detail: [{ loc: ['body', '__proto__'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' }] },
  });
  t.same(await sent('/check', '{"principal":{"attributes":{"constructor":"x","toString":"y"}},"resource":{"uri":"r"},"action":"ctor"}'), decided(allows('ctor')));
  await decides(t, server, { principal: { attributes: [{ key: 'constructor', value: 'x' }, { key: 'toString', value: 'y' }] }, resource: { uri: 'r' }, action: 'ctor' }, allows('ctor'));

  // Without the keys, nothing inherited counts as an attribute.
  await decides(t, server, { principal: { attributes: { a: 1 } }, resource: { uri: 'r' }, action: 'inherited' }, DENIED);
  await decides(t, server, { principal: { attributes: { doc: { a: 1 } } }, resource: { uri: 'r' }, action: 'nested-inherited' }, DENIED);
  t.same(await sent('/check', '{"principal":{"attributes":{"toString":"abc"}},"resource":{"uri":"r"},"action":"inherited"}'), decided(allows('inherited')));

  // Registered under those keys, then checked by uri, and merged without a false conflict.
  const registered = await sent('/admin/fetchers/registry/entities', '{"uri":"odd:1","type":"principal","attributes":{"__proto__":{"polluted":true},"constructor":"x"}}');
  t.equal(registered.status, 200);
  t.same(
    registered.body.attributes.map((attribute: { key: string; value: unknown }) => [attribute.key, attribute.value]),
    [['__proto__', { polluted: true }], ['constructor', 'x']],
  );
  await decides(t, server, { principal_uri: 'odd:1', resource_uri: 'r', action: 'proto' }, allows('proto'));
  t.same(await sent('/check', '{"principal":{"uri":"odd:1","attributes":{"toString":"y","constructor":"x"}},"resource":{"uri":"r"},"action":"ctor"}'), decided(allows('ctor')));
  t.same(await sent('/check', '{"principal":{"uri":"odd:1","attributes":{"__proto__":{"polluted":false}}},"resource":{"uri":"r"},"action":"proto"}'), {
    status: 400,
    body: { detail: conflict('odd:1', '__proto__') },
  });

  // The second item's own __proto__ key is a field the check does not know.
  const bulk = await sent('/check/bulk', '[{"principal":{"attributes":{"__proto__":{"polluted":true}}},"resource":{"uri":"r"},"action":"proto"},{"__proto__":{"polluted":true}}]');
  t.same([bulk.status, bulk.body.detail[0].loc], [422, ['body', 1, '__proto__']]);

  untouched();
  t.equal(typeof ({} as { toString: unknown }).toString, 'function');
});
