import t, { type Test } from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir, startServer, temporaryDataDir, type TestServer } from '../helpers/server.js';
import type { Config } from '../../src/config/config.js';
import { MAX_SCHEMA_DOCUMENT_LENGTH, MAX_SCHEMA_NODES } from '../../src/attribute-schemas/schema-document.js';

// The attribute schema document managed through the admin API: stored, versioned and audited,
// applied to the checks that follow (on the front and in the pool's threads, here and in another
// server on the same store), refused in files mode, and each write re-checks the stored policies.

const SCHEMAS = '/admin/schemas';

/** Users have an integer level, required. */
const LEVELS = { principal: { types: { user: { type: 'object', properties: { level: { type: 'integer' } }, required: ['level'] } } } };
/** Users have a level of any type, not required. */
const ANY_LEVEL = { principal: { types: { user: { type: 'object', properties: { level: {} } } } } };

/** Denies users below level 3 (a deny rule a string level slips past). */
const JUNIOR = {
  name: 'junior',
  default_effect: 'allow',
  rules: [{ name: 'low level', effect: 'deny', actions: ['read'], principal_conditions: [{ path: 'attributes.level', operator: 'lt', value: 3 }], resource_conditions: [] }],
};

async function server(t: Test, overrides: Partial<Config> = {}): Promise<TestServer> {
  const started = await startServer(overrides);
  t.teardown(() => started.close());
  return started;
}

const checkOf = (level: unknown) => ({ principal: { uri: 'user:ann', attributes: { level } }, resource: { uri: 'doc:1' }, action: 'read' });

t.test('the document is written, read, replaced, deleted and restored, each write a version with its audit record', async (t) => {
  const verdict = await server(t);
  t.same((await verdict.call('GET', SCHEMAS)).body, { detail: 'No attribute schema document is in force: PUT /admin/schemas writes one' });
  t.equal((await verdict.call('GET', SCHEMAS)).status, 404);
  t.same((await verdict.call('DELETE', SCHEMAS)).body, { detail: 'No attribute schema document is stored' });

  const before = Number((await verdict.call('GET', '/admin/policies')).headers['verdict-revision']);
  const written = await verdict.call('PUT', SCHEMAS, LEVELS);
  t.equal(written.status, 200);
  t.same(written.body, { document: LEVELS, version: 1, recheck: { policies: [], complete: true } });
  t.equal(Number(written.headers['verdict-revision']), before + 1, 'a schema write is a policy revision, named by its answer');
  t.same((await verdict.call('GET', SCHEMAS)).body, { document: LEVELS, version: 1, file: null });

  t.same((await verdict.call('PUT', SCHEMAS, ANY_LEVEL)).body, { document: ANY_LEVEL, version: 2, recheck: { policies: [], complete: true } });
  t.same((await verdict.call('DELETE', SCHEMAS)).body, { document: null, version: 3, recheck: { policies: [], complete: true } });
  t.equal((await verdict.call('GET', SCHEMAS)).status, 404, 'none in force after a deletion');

  const deletion = await verdict.call('POST', `${SCHEMAS}/restore?version=3`);
  t.same([deletion.status, deletion.body], [400, { detail: 'Version 3 of the attribute schemas is their deletion; restore an earlier version, or DELETE /admin/schemas' }]);
  t.same((await verdict.call('POST', `${SCHEMAS}/restore?version=9`)).body, { detail: 'The attribute schemas have no version 9 (it may be older than the audit retention)' });
  const restored = await verdict.call('POST', `${SCHEMAS}/restore?version=1`);
  t.same(restored.body, { document: LEVELS, version: 4, recheck: { policies: [], complete: true } });
  t.same((await verdict.call('GET', SCHEMAS)).body, { document: LEVELS, version: 4, file: null });

  const history = (await verdict.call('GET', `${SCHEMAS}/history?limit=3`)).body;
  t.same(
    history.records.map((record: any) => [record.operation, record.target, record.version, record.before, record.after, record.restored_from]),
    [
      ['schemas.restore', 'schemas', 4, null, LEVELS, 1],
      ['schemas.delete', 'schemas', 3, ANY_LEVEL, null, undefined],
      ['schemas.replace', 'schemas', 2, LEVELS, ANY_LEVEL, undefined],
    ],
    'newest first, with the document before and after',
  );
  t.ok(history.next_cursor, 'paged');
  const older = (await verdict.call('GET', `${SCHEMAS}/history?limit=3&cursor=${history.next_cursor}`)).body;
  t.same(older.records.map((record: any) => [record.operation, record.version, record.before]), [['schemas.replace', 1, null]]);
  t.match((await verdict.call('GET', `${SCHEMAS}/history/2`)).body, { operation: 'schemas.replace', version: 2, after: ANY_LEVEL, actor: 'anonymous', route: `PUT ${SCHEMAS}` });
  t.equal((await verdict.call('GET', `${SCHEMAS}/history/7`)).status, 404);
  const audit = (await verdict.call('GET', '/admin/audit?target=schemas')).body.records;
  t.same(audit.map((record: any) => record.operation), ['schemas.restore', 'schemas.delete', 'schemas.replace', 'schemas.replace'], 'in the audit trail, under target schemas');
});

t.test('a document that cannot be used is refused, naming the schema and the problem, and nothing is written', async (t) => {
  const verdict = await server(t, { bodyLimit: 4 * 1024 * 1024 });
  await verdict.call('PUT', SCHEMAS, LEVELS);
  const deep = (levels: number) => {
    let schema: unknown = { type: 'string' };
    for (let level = 0; level < levels; level++) schema = { type: 'object', properties: { a: schema } };
    return { principal: { attributes: schema } };
  };
  const huge = { principal: { attributes: { type: 'object', properties: Object.fromEntries(Array.from({ length: 40_000 }, (_, index) => [`attribute${index}`, { type: 'string' }])) } } };
  t.ok(JSON.stringify(huge).length > MAX_SCHEMA_DOCUMENT_LENGTH, 'the huge document is past the bound');
  // Short, but more to compile than any process should stop its checks for: each attribute its own schema.
  const attributes = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`a${index}`, { type: 'integer' }]));
  const manyAttributes = { principal: { attributes: { type: 'object', properties: attributes(MAX_SCHEMA_NODES) } } };
  t.ok(JSON.stringify(manyAttributes).length < MAX_SCHEMA_DOCUMENT_LENGTH / 4, 'the many-attribute document is well within the length bound');
  const refusals: [string, unknown, number, RegExp][] = [
    ['a misspelled keyword', { principal: { types: { user: { type: 'object', propertees: {} } } } }, 422, /^body: The schema document principal\.types\.user is not a valid JSON Schema: strict mode: unknown keyword: "propertees"$/],
    ['an unknown type', { resource: { attributes: { type: 'text' } } }, 422, /^body: The schema document resource\.attributes is not a valid JSON Schema: .*type/],
    ['an unknown format', { context: { attributes: { type: 'string', format: 'postcode' } } }, 422, /^body: The schema document context\.attributes is not a valid JSON Schema: unknown format "postcode"/],
    ['a required attribute not listed', { principal: { attributes: { type: 'object', properties: {}, required: ['level'] } } }, 422, /^body: The schema document principal\.attributes is not a valid JSON Schema: strict mode: required property "level"/],
    ['a document longer than 1 MiB', huge, 422, /^body: The schema document longer than 1048576 characters$/],
    ['a document with too much to compile', manyAttributes, 422, new RegExp(`^body: The schema document holds more than ${MAX_SCHEMA_NODES} objects and lists in its schemas`)],
    [
      'a pattern the linear-time engine does not take (a lookahead)',
      { principal: { attributes: { type: 'object', properties: { code: { type: 'string', pattern: '^(?=a)b$' } } } } },
      422,
      /^body: The schema document principal\.attributes has the pattern "\^\(\?=a\)b\$", which is not a regular expression the linear-time engine takes/,
    ],
    [
      'a property-name pattern it does not take (a backreference)',
      { resource: { types: { doc: { type: 'object', patternProperties: { '^(x)\\1$': { type: 'string' } } } } } },
      422,
      /^body: The schema document resource\.types\.doc has the pattern "\^\(x\)\\\\1\$"/,
    ],
    ['an unknown part', { subject: { attributes: {} } }, 422, /^body\.subject: Extra inputs are not permitted$/],
    ['types on the context', { context: { types: { x: {} } } }, 422, /^body\.context\.types: Extra inputs are not permitted$/],
    ['a list', [LEVELS], 422, /^body: must be of type object$/],
    ['nesting past the JSON depth limit', deep(200), 422, /^body\.principal\.attributes\.properties\.a(\.properties\.a)+: is nested more than 100 levels deep$/],
  ];
  for (const [what, document, status, detail] of refusals) {
    const answer = await verdict.call('PUT', SCHEMAS, document);
    t.equal(answer.status, status, what);
    const issues = answer.body.detail as { loc: string[]; msg: string }[];
    const message = issues.map((issue) => `${issue.loc.join('.')}: ${issue.msg}`).join('; ');
    t.match(message, detail, what);
  }
  t.same((await verdict.call('GET', SCHEMAS)).body, { document: LEVELS, version: 1, file: null }, 'the document in force is unchanged');
  t.equal((await verdict.call('GET', `${SCHEMAS}/history`)).body.records.length, 1, 'no refused write is recorded');
  const safePatterns = { principal: { attributes: { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{2}-(\\d{3})?[0-9]+$', enum: [{ pattern: '(a+)+' }] } } } } };
  t.equal((await verdict.call('PUT', SCHEMAS, safePatterns)).status, 200, 'a pattern without nested repetition is taken, and an enumerated value is data, not a pattern');
});

t.test('schemas come from a file: their writes answer 409 saying where to change them, reads say which file', async (t) => {
  const dir = scratchDir(t);
  const schemasFile = join(dir, 'schemas.json');
  writeFileSync(schemasFile, JSON.stringify(LEVELS));
  const fromFile = await server(t, { schemasFile });
  const refusal = `Attribute schemas are managed from the file ${schemasFile}, given by --schemas (SCHEMAS_FILE): change it there instead; schema reads, policy validation and checks still work`;
  for (const [method, path, body] of [['PUT', SCHEMAS, ANY_LEVEL], ['DELETE', SCHEMAS], ['POST', `${SCHEMAS}/restore?version=1`]] as const) {
    const answer = await fromFile.call(method, path, body);
    t.same([answer.status, answer.body], [409, { detail: refusal }], `${method} ${path}`);
  }
  t.same((await fromFile.call('GET', SCHEMAS)).body, { document: LEVELS, version: 0, file: schemasFile });

  const policies = join(dir, 'policies');
  mkdirSync(policies);
  const beside = await server(t, { policiesDir: policies });
  const answer = await beside.call('PUT', SCHEMAS, LEVELS);
  t.same(
    [answer.status, answer.body],
    [409, { detail: `Attribute schemas are managed from the file ${join(policies, 'schemas.json')}, given by --policies (POLICIES_DIR): change it there instead; schema reads, policy validation and checks still work` }],
    'with policy files, the schemas.json beside them is where schemas are changed, there or not',
  );
  t.same((await beside.call('GET', SCHEMAS)).body, { detail: `No attribute schema document is in force: ${join(policies, 'schemas.json')} holds none` });
  const policyWrite = await beside.call('POST', '/admin/policies', JUNIOR);
  t.same([policyWrite.status, policyWrite.body], [409, { detail: `Policies are managed from files in ${policies} (--policies): change the files there instead; policy reads, validation and the registry still work` }], 'the policies\' 409 as it was');
});

t.test('reject: the checks after a schema write are held to it, on the front and in the pool alike', async (t) => {
  for (const evaluation of ['inline', 'pool'] as const) {
    const verdict = await server(t, { schemaEnforcement: 'reject', evaluation });
    t.equal((await verdict.call('POST', '/admin/policies', JUNIOR)).status, 200);
    const check = () => verdict.call('POST', '/check', checkOf('1'));
    const bulk = async () => (await verdict.call('POST', '/check/bulk', [checkOf(5), checkOf('1')])).body;
    const allowed = { allowed: true, reason: 'Action allowed by default effect' };
    t.same((await check()).body, allowed, `${evaluation}: without schemas, a string level slips past the deny`);
    t.same(await bulk(), [allowed, allowed], evaluation);

    await verdict.call('PUT', SCHEMAS, LEVELS);
    const refused = "The check breaks the attribute schema: principal 'user:ann': attribute 'level' must be integer (type)";
    t.same([(await check()).status, (await check()).body], [400, { detail: refused }], `${evaluation}: the next check is refused`);
    t.same(await bulk(), [allowed, { allowed: false, reason: refused }], `${evaluation}: the next bulk's item is denied`);

    await verdict.call('PUT', SCHEMAS, ANY_LEVEL);
    t.same((await check()).body, allowed, `${evaluation}: a relaxed schema applies at once`);
    t.same(await bulk(), [allowed, allowed], evaluation);
    await verdict.call('POST', `${SCHEMAS}/restore?version=1`);
    t.same(await bulk(), [allowed, { allowed: false, reason: refused }], `${evaluation}: so does a restored one`);
    await verdict.call('DELETE', SCHEMAS);
    t.same((await check()).body, allowed, `${evaluation}: and a deletion`);
    t.same(await bulk(), [allowed, allowed], evaluation);
  }
});

t.test('a registration is held to the schemas written, under reject', async (t) => {
  const verdict = await server(t, { schemaEnforcement: 'reject' });
  const register = (uri: string, level: unknown) => verdict.call('POST', '/admin/fetchers/registry/entities', { uri, attributes: { level } });
  t.equal((await register('user:a', '5')).status, 200);
  await verdict.call('PUT', SCHEMAS, LEVELS);
  const refused = await register('user:b', '5');
  t.same([refused.status, refused.body.detail[0].msg], [422, "principal 'user:b': attribute 'level' must be integer (type)"]);
});

t.test('two servers on one store: a schema write through one is enforced by the other', async (t) => {
  const dataDir = temporaryDataDir();
  const first = await startServer({ dataDir, schemaEnforcement: 'reject' });
  const second = await startServer({ dataDir, schemaEnforcement: 'reject', evaluation: 'pool' });
  t.teardown(async () => {
    await first.close();
    await second.close();
  });
  t.equal((await second.call('POST', '/check', checkOf('1'))).status, 200);
  const written = await first.call('PUT', SCHEMAS, LEVELS);
  const revision = written.headers['verdict-revision'] as string;
  const check = await second.call('POST', '/check', checkOf('1'), { 'verdict-min-revision': revision });
  t.same([check.status, check.body.detail], [400, "The check breaks the attribute schema: principal 'user:ann': attribute 'level' must be integer (type)"], 'held to it from the revision of the write on');
  const bulk = await second.call('POST', '/check/bulk', [checkOf('1')]);
  t.equal(bulk.body[0].allowed, false, 'in its pool too');
  t.same((await second.call('GET', SCHEMAS)).body, { document: LEVELS, version: 1, file: null });

  await second.call('DELETE', SCHEMAS);
  const deleted = (await second.call('GET', '/admin/policies')).headers['verdict-revision'] as string;
  t.equal((await first.call('POST', '/check', checkOf('1'), { 'verdict-min-revision': deleted })).status, 200, 'and the other way round');
});

t.test('a schema write reports the stored policies that now have problems against it, which stay in force', async (t) => {
  const verdict = await server(t, { schemaEnforcement: 'reject' });
  const stringLevel = {
    name: 'string-level',
    default_effect: 'allow',
    rules: [
      { name: 'by text', effect: 'deny', actions: ['read'], principal_conditions: [{ path: 'attributes.level', operator: '==', value: '1' }], resource_conditions: [] },
      { name: 'typo', effect: 'deny', actions: ['write'], principal_conditions: [{ path: 'attributes.levle', operator: 'exists' }], resource_conditions: [] },
    ],
  };
  for (const policy of [JUNIOR, stringLevel]) t.equal((await verdict.call('POST', '/admin/policies', policy)).status, 200);
  const closed = { principal: { types: { user: { ...LEVELS.principal.types.user, additionalProperties: false } } } };
  const written = await verdict.call('PUT', SCHEMAS, closed);
  t.equal(written.status, 200, 'taken under reject');
  t.same(written.body.recheck, {
    policies: [
      {
        name: 'string-level',
        problems: [
          { loc: ['rules', 0, 'principal_conditions', 0, 'value'], msg: "rule 'by-text': \"1\" is string, but principal attribute 'level' is declared integer", type: 'schema_error' },
          { loc: ['rules', 1, 'principal_conditions', 0, 'path'], msg: "rule 'typo': principal attribute 'levle' is not declared by the principal schemas", type: 'schema_error' },
        ],
      },
    ],
    complete: true,
  });
  t.same((await verdict.call('GET', '/admin/policies/string-level')).body.name, 'string-level', 'the policy is still stored');
  const decided = await verdict.call('POST', '/check', { principal: { uri: 'user:ann', attributes: { level: 4 } }, resource: { uri: 'doc:1' }, action: 'write' });
  t.same(decided.body, { allowed: true, reason: 'Action allowed by default effect' }, 'and decides');
  const update = await verdict.call('PUT', '/admin/policies/string-level', stringLevel);
  t.equal(update.status, 422, 'a write of it is now refused under reject, as every policy write is');

  // Many policies with many problems: the report stops at 100.
  await verdict.call('DELETE', SCHEMAS);
  const conditions = Array.from({ length: 5 }, (_, index) => ({ path: `attributes.missing${index}`, operator: 'exists' }));
  for (let index = 0; index < 30; index++) {
    const rule = { name: 'r', effect: 'deny', actions: ['read'], principal_conditions: conditions, resource_conditions: [] };
    t.equal((await verdict.call('POST', '/admin/policies', { name: `many-${index}`, rules: [rule] })).status, 200);
  }
  const bounded = (await verdict.call('PUT', SCHEMAS, closed)).body.recheck;
  const listed = bounded.policies.flatMap((policy: { problems: unknown[] }) => policy.problems);
  t.equal(listed.length, 100, 'at most 100 problems');
  t.equal(bounded.complete, false, 'and says so');
  t.same(bounded.policies.slice(0, 2).map((policy: { name: string }) => policy.name), ['string-level', 'many-0'], 'in policy order');
});
