// Asks whether the tests would catch a list of realistic bugs: plants each one, alone, in a scratch
// copy of the working tree (uncommitted changes included), builds it, runs the test files that
// should catch it, and prints which bugs were caught (a test failed) and which survived. Not part
// of `npm test`; see docs/development.md.
//
//   node scripts/mutation-check.mjs                 every mutant
//   node scripts/mutation-check.mjs --only restore  the mutants whose name contains the text
//   node scripts/mutation-check.mjs --list          names and covering tests, nothing run
//   node scripts/mutation-check.mjs --keep          leaves the scratch copy for a look
//
// Exit code 0 when every mutant was caught, 1 when one survived, no longer applies (its search
// text is not in the file exactly once) or does not build, 2 when the covering tests fail without
// any mutant.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The planted bugs. Each: what a user would see, the changes that plant it (each `search` text must
 * occur exactly once in its file, and is replaced by `replace`), and the test files that should
 * catch it. The first eight, and four of the last ten, survived the suite once, and are each caught by a test written for them.
 */
const MUTANTS = [
  {
    name: 'a worker two writes behind is sent the first change of a policy, not the last',
    changes: [
      {
        file: 'src/snapshot/policy-snapshots.ts',
        search: 'for (const change of step.changes) byName.set(change.name, change);',
        replace: 'for (const change of step.changes) if (!byName.has(change.name)) byName.set(change.name, change);',
      },
    ],
    tests: ['test/pool/bulk-pool.test.ts'],
  },
  {
    name: 'a single look-up that raced an entity write caches the old attributes',
    changes: [{ file: 'src/registry/entity-cache.ts', search: 'if (generation === this.generation) this.remember(uri, attributes);', replace: 'this.remember(uri, attributes);' }],
    tests: ['test/registry/entity-cache.test.ts'],
  },
  {
    name: 'the audit routes answer without the admin key',
    changes: [
      { file: 'src/http/server.ts', search: '    await admin.register(auditRoutes, { context });\n', replace: '' },
      { file: 'src/http/server.ts', search: '  await app.register(dashboardRoutes);', replace: '  await app.register(dashboardRoutes);\n  await app.register(auditRoutes, { context });' },
    ],
    tests: ['test/http/auth.test.ts', 'test/http/roles.test.ts'],
  },
  {
    name: '/check-access ignores verdict-min-revision',
    changes: [{ file: 'src/http/eunomia-earlier-family.ts', search: '    onRequest: echoingRequestId(context.minRevisionCheck),\n', replace: '' }],
    tests: ['test/http/min-revision.test.ts', 'test/http/revision-header.test.ts'],
  },
  {
    name: 'a policy file that does not parse is left out of the set',
    changes: [{ file: 'src/policy-files/read-directory.ts', search: 'problems.push(error.message);', replace: 'continue;' }],
    tests: ['test/policy-files/directory.test.ts'],
  },
  {
    name: 'bulk reading stops at the first unusable item',
    changes: [{ file: 'src/requests/bulk-request.ts', search: 'if (Array.isArray(input)) issues.push(...input);', replace: 'if (Array.isArray(input)) throw new RequestValidationError(input);' }],
    tests: ['test/http/check-bulk.test.ts', 'test/http/plan.test.ts', 'test/http/bulk-pool.test.ts'],
  },
  {
    name: 'a bulk is checked for UTF-8 only when the front decides it',
    changes: [
      {
        file: 'src/http/check.ts',
        search: 'acceptJsonBytes(bulkScope, (bytes) => bytes);',
        replace: "bulkScope.removeAllContentTypeParsers();\n    bulkScope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));",
      },
      {
        file: 'src/http/check.ts',
        search: "        const decided = checks.checkMany(readBulkBody(bytes.toString('utf8'), validate, limits), explain, originOf(request), conflicts === 'refuse');",
        replace:
          "        if (!isUtf8(bytes)) throw new ClientError(400, 'Request body is not valid UTF-8');\n        const decided = checks.checkMany(readBulkBody(bytes.toString('utf8'), validate, limits), explain, originOf(request), conflicts === 'refuse');",
      },
      { file: 'src/http/check.ts', search: "import { RequestValidationError } from '../errors.js';", replace: "import { ClientError, RequestValidationError } from '../errors.js';\nimport { isUtf8 } from 'node:buffer';" },
    ],
    tests: ['test/http/utf8.test.ts'],
  },
  {
    name: "restoring a version brings back the policy it replaced, not the one it wrote",
    changes: [{ file: 'src/services/policies.ts', search: 'const { policy, contradicted } = this.accept(record.after);', replace: 'const { policy, contradicted } = this.accept(record.before ?? record.after);' }],
    tests: ['test/http/history.test.ts', 'test/store/contract/policies.test.ts', 'test/store/contract/audit.test.ts'],
  },
  {
    name: 'a keys file line that is not three fields is skipped instead of refusing the file',
    changes: [{ file: 'src/admin-keys.ts', search: 'if (fields.length !== 3) throw new Error(', replace: 'if (fields.length !== 3) return; if (false) throw new Error(' }],
    tests: ['test/http/roles.test.ts'],
  },
  {
    name: 'a policy file named by a test file that does not parse counts as no policies',
    changes: [
      {
        file: 'src/cli/policy-tests/test-file.ts',
        search: 'const held = readDocument(file);',
        replace: 'let held: unknown;\n    try {\n      held = readDocument(file);\n    } catch {\n      held = [];\n    }',
      },
    ],
    tests: ['test/cli/policy-tests.test.ts'],
  },
  {
    name: '/admin/whoami answers without the admin key',
    changes: [
      {
        file: 'src/http/server.ts',
        search: "    await admin.register(whoamiRoutes, { operatorStyle: config.operatorStyle, policyFiles: config.policiesDir === '' ? null : config.policiesDir });\n",
        replace: '',
      },
      {
        file: 'src/http/server.ts',
        search: '  await app.register(dashboardRoutes);',
        replace: "  await app.register(dashboardRoutes);\n  await app.register(whoamiRoutes, { operatorStyle: config.operatorStyle, policyFiles: config.policiesDir === '' ? null : config.policiesDir });",
      },
    ],
    tests: ['test/http/auth.test.ts'],
  },
  {
    name: 'bulks ignore --bulk-check-max-requests',
    changes: [{ file: 'src/requests/bulk-request.ts', search: '  bulkCheckMaxRequests: config.bulkCheckMaxRequests,', replace: '  bulkCheckMaxRequests: 1000,' }],
    tests: ['test/http/check-bulk.test.ts', 'test/http/bulk-pool.test.ts', 'test/http/limits.test.ts'],
  },
  {
    name: 'policy files fixed after a rejection leave /ready degraded',
    changes: [{ file: 'src/policy-files/policy-directory.ts', search: '    this.rejected = undefined;\n', replace: '' }],
    tests: ['test/policy-files/directory.test.ts'],
  },
  {
    name: "the entity cache's warm-up keeps a page read while an entity was written",
    changes: [{ file: 'src/registry/entity-cache.ts', search: 'if (generation === this.generation) {', replace: 'if (true) {' }],
    tests: ['test/registry/entity-cache.test.ts'],
  },
  {
    name: "another process's entity writes do not reach this one's cache",
    changes: [{ file: 'src/snapshot/follow-changes.ts', search: '        entities.invalidate(change.uri);\n', replace: '' }],
    tests: ['test/http/two-servers.test.ts'],
  },
  // Four that survived the suite in the fourth round's review, and one each from the areas added since.
  {
    name: 'an ordering relation converts the value it refers to with Number()',
    changes: [
      {
        file: 'src/engine/operators.ts',
        search: '    relate: (attribute, value) => isNumber(attribute) && isNumber(value) && test(attribute, value),',
        replace: '    relate: (attribute, value) => isNumber(attribute) && test(attribute, Number(value)),',
      },
    ],
    tests: ['test/engine/relations.test.ts'],
  },
  {
    name: "an action search's page token repeats the last action of the page before",
    changes: [{ file: 'src/services/authzen-search.ts', search: 'keys[start]! <= after) start++;', replace: 'keys[start]! < after) start++;' }],
    tests: ['test/http/authzen-search-pages.test.ts'],
  },
  {
    name: "required in a resource type's schema is not asked of checks",
    changes: [{ file: 'src/attribute-schemas/attribute-validators.ts', search: "const counted = resourceKnown === 'partial' ? holdsOfPartialResource : undefined;", replace: 'const counted = holdsOfPartialResource;' }],
    tests: ['test/http/schemas.test.ts'],
  },
  {
    name: 'registrations are held to the schemas of principal types only',
    changes: [{ file: 'src/attribute-schemas/attribute-validators.ts', search: "for (const part of ['principal', 'resource'] as const) {", replace: "for (const part of ['principal'] as const) {" }],
    tests: ['test/http/schemas.test.ts'],
  },
  {
    name: 'explanations are answered without an admin key while authentication is on',
    changes: [{ file: 'src/http/server.ts', search: 'explainGuard: keyCheck && ((request, reply) => keyCheck.requireKey(request, reply, EXPLAIN_NEEDS_KEY)),', replace: 'explainGuard: undefined,' }],
    tests: ['test/http/explain-auth.test.ts'],
  },
  {
    name: 'schema patterns run on the backtracking engine',
    changes: [{ file: 'src/attribute-schemas/schema-document.ts', search: 'regExp: schemaPatterns, ', replace: '' }],
    tests: ['test/http/schema-admin.test.ts'],
  },
  {
    name: "a deny rule's value_from is not counted among the attributes a request may leave out",
    changes: [{ file: 'src/engine/warnings/omissions.ts', search: '  if (referenced !== undefined) needed.push([SIDE_OF_PART[referenced.part], referenced.path]);\n', replace: '' }],
    tests: ['test/engine/relations.test.ts', 'test/engine/warnings.test.ts'],
  },
  {
    name: "a .env's ADMIN_AUTHN_REQUIRED=false turns off authentication the environment turned on",
    changes: [{ file: 'src/cli/dotenv/load.ts', search: "if (report.settings.includes('ADMIN_AUTHN_REQUIRED') && ", replace: "if (false && report.settings.includes('ADMIN_AUTHN_REQUIRED') && " }],
    tests: ['test/cli/dotenv.test.ts'],
  },
  {
    name: 'an AuthZEN evaluation left without a subject after the defaults fails the whole batch',
    changes: [{ file: 'src/services/authzen.ts', search: "if ('undecidable' in input) return undecidable(input.undecidable);", replace: "if ('undecidable' in input) throw new ClientError(400, input.undecidable);" }, { file: 'src/services/authzen.ts', search: "import { answerEach } from '../decide/answer-each.js';", replace: "import { answerEach } from '../decide/answer-each.js';\nimport { ClientError } from '../errors.js';" }],
    tests: ['test/http/authzen.test.ts'],
  },
  {
    name: 'measured placement never tries the path it did not choose',
    changes: [{ file: 'src/pool/measured-placement.ts', search: "return window.path === chosen && windows % this.trialEvery === 0 ? (chosen === 'pool' ? 'inline' : 'pool') : chosen;", replace: 'return chosen;' }],
    tests: ['test/pool/measured-placement.test.ts'],
  },
  // The twelve that survived the fifth round's review, and two caught then only by accident.
  {
    name: 'a token without an expiry is accepted',
    changes: [{ file: 'src/tokens/verifier.ts', search: "requiredClaims: ['exp']", replace: 'requiredClaims: []' }],
    tests: ['test/http/tokens.test.ts'],
  },
  {
    name: "ext-authz takes '..' as a path segment",
    changes: [{ file: 'src/ext-authz/mapping.ts', search: "if (segment === '.' || segment === '..' || segment.includes('/')) return undefined;", replace: "if (segment === '.' || segment.includes('/')) return undefined;" }],
    tests: ['test/mesh/ext-authz-reading.test.ts'],
  },
  {
    name: 'ext-authz takes an encoded slash inside a segment',
    changes: [{ file: 'src/ext-authz/mapping.ts', search: "if (segment === '.' || segment === '..' || segment.includes('/')) return undefined;", replace: "if (segment === '.' || segment === '..') return undefined;" }],
    tests: ['test/mesh/ext-authz-reading.test.ts'],
  },
  {
    name: "PATCH is missing from ext-authz's default method table",
    changes: [{ file: 'src/ext-authz/mapping.ts', search: "PUT: 'update', PATCH: 'update', ", replace: "PUT: 'update', " }],
    tests: ['test/mesh/ext-authz-reading.test.ts'],
  },
  {
    name: "the defaults override an ext-authz route's own actions",
    changes: [{ file: 'src/ext-authz/mapping.ts', search: 'actions: { ...defaults, ...route.actions }', replace: 'actions: { ...route.actions, ...defaults }' }],
    tests: ['test/mesh/ext-authz-reading.test.ts'],
  },
  {
    name: "the Node client's bulk carries the lowest verdict-min-revision of its checks",
    changes: [{ file: 'clients/node/src/batcher.ts', search: 'const minRevision = Math.max(...batch.map((pending) => pending.minRevision ?? 0));', replace: 'const minRevision = Math.min(...batch.map((pending) => pending.minRevision ?? 0));' }],
    tests: ['test/client/failures.test.ts'],
  },
  {
    name: "the change feed does not say \"entities\": \"all\" when the entity cache is cleared",
    changes: [{ file: 'src/services/change-feed.ts', search: 'const cleared = () => this.entityChanged(undefined);', replace: 'const cleared = () => undefined;' }],
    tests: ['test/services/change-feed.test.ts'],
  },
  {
    name: 'a shadow is decided beside the live policy it names instead of in its place',
    changes: [{ file: 'src/snapshot/policy-snapshots.ts', search: '    else set.set(replaced, shadow);', replace: '    else set.set(shadow.name, shadow);' }],
    tests: ['test/http/shadow.test.ts'],
  },
  {
    name: 'a derived snapshot does not take removed scoped policies from the scoped defaults',
    changes: [{ file: 'src/engine/scope.ts', search: '    for (const policy of removedPolicies) count(policy, -1);\n', replace: '' }],
    tests: ['test/engine/scope-derive.test.ts'],
  },
  {
    name: 'the MongoDB maintenance lease holder cannot renew its own lease',
    changes: [{ file: 'src/store/mongodb/maintenance.ts', search: '$or: [{ value: { $lt: now } }, { holder: this.holder }]', replace: '$or: [{ value: { $lt: now } }]' }],
    tests: ['test/store/mongodb-maintenance.test.ts'],
  },
  {
    name: 'the change stream does not follow the schemas collection',
    changes: [{ file: 'src/store/mongodb/feed.ts', search: "const FOLLOWED = ['policies', 'entities', 'schemas'];", replace: "const FOLLOWED = ['policies', 'entities'];" }],
    tests: ['test/store/mongodb-feed.test.ts'],
  },
  {
    name: "a key set's close() leaves its retry timer running",
    changes: [{ file: 'src/tokens/key-set.ts', search: '    clearTimeout(this.retry);\n', replace: '' }],
    tests: ['test/http/tokens.test.ts'],
  },
  {
    name: "a key set's algorithm list is not held to",
    changes: [{ file: 'src/tokens/verifier.ts', search: 'const options = { algorithms, issuer, audience,', replace: 'const options = { issuer, audience,' }],
    tests: ['test/http/tokens.test.ts'],
  },
  {
    name: "the Node client's bulk halved on 413 loses a check",
    changes: [{ file: 'clients/node/src/batcher.ts', search: 'this.send(batch.slice(half), explain)', replace: 'this.send(batch.slice(half + 1), explain)' }],
    tests: ['test/client/failures.test.ts'],
  },
];

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function option(name) {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}
const only = option('--only');
const selected = MUTANTS.filter((mutant) => only === undefined || mutant.name.includes(only));
const distOf = (test) => join('dist', test.replace(/\.ts$/, '.js'));

if (process.argv.includes('--list')) {
  for (const mutant of selected) console.log(`${mutant.name}\n    ${[...new Set(mutant.changes.map((change) => change.file))].join(', ')} → ${mutant.tests.join(', ')}`);
  process.exit(0);
}
if (selected.length === 0) {
  console.error(`no mutant's name contains '${only}'`);
  process.exit(2);
}

/** Runs `command` in the scratch copy; its output is kept, not shown. */
function run(scratch, command, args) {
  const result = spawnSync(command, args, { cwd: scratch, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, env: { ...process.env, FORCE_COLOR: '0' } });
  return { code: result.status ?? 1, output: `${result.stdout}${result.stderr}` };
}

/** The working tree as git sees it (tracked and untracked files, less what it ignores), with the shared node_modules. */
function scratchCopy() {
  const scratch = mkdtempSync(join(tmpdir(), 'verdict-mutants-'));
  const listed = spawnSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: ROOT, encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`git ls-files: ${listed.stderr}`);
  for (const file of listed.stdout.split('\0').filter((path) => path !== '' && path !== 'node_modules')) {
    mkdirSync(dirname(join(scratch, file)), { recursive: true });
    // A file deleted but not yet staged is still listed.
    try {
      cpSync(join(ROOT, file), join(scratch, file));
    } catch (error) {
      if (error.code !== 'ENOENT') throw error;
    }
  }
  symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(scratch, 'node_modules'));
  return scratch;
}

/** Transpiles what changed (esbuild only: no type check, so a mutant need not type-check). */
const build = (scratch) => run(scratch, process.execPath, ['scripts/build.mjs', '--all']);

/** The first failing assertion of a TAP stream (the deepest comes first), where it is in its test file. */
function firstFailure(output) {
  const lines = output.split('\n');
  const at = lines.findIndex((line) => /^\s*not ok \d+ - /.test(line));
  if (at === -1) return lines.filter((line) => line.trim() !== '').slice(-3).join(' / ');
  const name = lines[at].replace(/^\s*not ok \d+ - /, '').replace(/ # time=.*$/, '');
  const block = lines.slice(at + 1, at + 40).join('\n');
  const place = /^\s*at:\n\s*fileName: (\S+)\n\s*lineNumber: (\d+)/m.exec(block);
  return place === null ? name : `${place[1]}:${place[2]}: ${name}`;
}

function runTests(scratch, tests, bail) {
  return run(scratch, join(scratch, 'node_modules/.bin/tap'), [...(bail ? ['--bail'] : []), '--reporter=tap', ...tests.map(distOf)]);
}

/** What the covering tests make of `mutant`: planted alone, built, tested with --bail, then taken out again. */
function tryMutant(scratch, mutant) {
  const originals = new Map();
  for (const { file, search } of mutant.changes) {
    const text = originals.get(file) ?? readFileSync(join(scratch, file), 'utf8');
    originals.set(file, text);
    const count = text.split(search).length - 1;
    if (count !== 1) return { status: 'does not apply', detail: `${file}: the search text occurs ${count} times` };
  }
  const planted = new Map(originals);
  for (const { file, search, replace } of mutant.changes) planted.set(file, planted.get(file).replace(search, () => replace));
  try {
    for (const [file, text] of planted) writeFileSync(join(scratch, file), text);
    const built = build(scratch);
    if (built.code !== 0) return { status: 'does not build', detail: built.output.trim().split('\n').slice(0, 3).join(' / ') };
    const tested = runTests(scratch, mutant.tests, true);
    return tested.code === 0 ? { status: 'SURVIVED', detail: 'every covering test passed' } : { status: 'caught', detail: firstFailure(tested.output) };
  } finally {
    for (const [file, text] of originals) writeFileSync(join(scratch, file), text);
  }
}

const scratch = scratchCopy();
try {
  const built = build(scratch);
  if (built.code !== 0) throw new Error(`the tree does not build:\n${built.output}`);
  const covering = [...new Set(selected.flatMap((mutant) => mutant.tests))];
  console.log(`baseline: ${covering.length} test file(s) on the tree as it is`);
  const baseline = runTests(scratch, covering, false);
  if (baseline.code !== 0) {
    console.error(`the covering tests fail without any mutant: ${firstFailure(baseline.output)}`);
    process.exitCode = 2;
  } else {
    const statuses = [];
    for (const mutant of selected) {
      const startedAt = Date.now();
      const { status, detail } = tryMutant(scratch, mutant);
      console.log(`${status.padEnd(14)} ${mutant.name} (${((Date.now() - startedAt) / 1000).toFixed(0)} s)\n               ${detail}`);
      statuses.push(status);
    }
    const count = (status) => statuses.filter((each) => each === status).length;
    const broken = count('does not apply') + count('does not build');
    console.log(`\n${count('caught')} caught, ${count('SURVIVED')} survived, ${broken} no longer apply or build, of ${statuses.length}`);
    if (count('caught') !== statuses.length) process.exitCode = 1;
  }
} finally {
  if (process.argv.includes('--keep')) console.log(`scratch copy kept: ${scratch}`);
  else rmSync(scratch, { recursive: true, force: true });
}
