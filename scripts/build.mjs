// Emits the JavaScript Node runs into dist/, redoing only what changed since the last run, so that
// `npm start` on an unchanged tree starts at once:
// - each TypeScript file transpiled on its own by esbuild (`tsc -b`, in `npm run build`, checks types);
// - the dashboard bundled by dashboard/build.mjs;
// - the server bundled into dist/bundle/, which `verdict` (dist/src/cli.js) runs: its command line and its
//   worker threads' files, with the packages they load, split where the code loads a module only when used.
//   A start then reads a few files where it would read some six hundred, each resolved and compiled on its
//   own: ready sooner, and less held. The files built one by one remain, for the tests that import them.
//
//   node scripts/build.mjs         what `verdict start` needs: src, workers and the dashboard
//   node scripts/build.mjs --all   the tests and benchmarks too
//
// `npm ci` runs the first as `prepare`, with --omit=dev too: that is why esbuild and preact are
// production dependencies, and why a production install needs no TypeScript compiler.
import { build } from 'esbuild';
import { existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { DASHBOARD_OUTPUT, bundleDashboard } from '../dashboard/build.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
const SERVER = ['src', 'workers'];
// dashboard/src: the tests import its modules directly.
const DEVELOPMENT = ['test', 'bench', 'dashboard/src', 'clients/node/src', 'examples'];
const DASHBOARD_INPUTS = join(DIST, '.dashboard-inputs.json');
const SERVER_BUNDLE = join(DIST, 'bundle');
const SERVER_BUNDLE_INPUTS = join(DIST, '.server-bundle-inputs.json');
// Named `[name].js` in one directory, the workers' files beside the code that names them (workers/entry-points.ts).
const SERVER_ENTRY_POINTS = { main: 'src/cli/main.ts', evaluate: 'workers/evaluate.ts', 'decision-log-writer': 'workers/decision-log-writer.ts' };
// Left to Node to load from node_modules: a native module, Piscina (which starts threads on a file of its own),
// Ajv (which the server and Fastify's compilers require when a schema is first compiled: one copy, loaded then),
// and what only some configurations load (MongoDB, tracing, gRPC).
const NOT_BUNDLED = ['better-sqlite3', 'piscina', 'ajv', 'ajv-formats', 'mongodb', 'mongodb-memory-server', '@opentelemetry/*', '@grpc/*', 'grpc-health-check'];
const requireFromRoot = createRequire(join(ROOT, 'package.json'));

/**
 * A bundled package that reads its own files (swagger-ui its pages) finds them where it is installed: each of its
 * modules that names `__dirname` is given the directory it has in node_modules, found at run time.
 */
const ownDirectories = {
  name: 'own-directories',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/].*\.c?js$/ }, (args) => {
      const contents = readFileSync(args.path, 'utf8');
      if (!contents.includes('__dirname')) return undefined;
      const [, packageName, within] = /.*[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)[\\/](.*)$/.exec(args.path);
      requireFromRoot.resolve(`${packageName}/package.json`); // throws, at build, when the package does not let it be found so
      const directory = `require('node:path').join(require('node:path').dirname(require.resolve(${JSON.stringify(`${packageName}/package.json`)})), ${JSON.stringify(dirname(within))})`;
      return { contents: `var __dirname = ${directory};\n${contents}`, loader: 'js' };
    });
  },
};

const at = (path) => join(ROOT, path);
function modified(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

// Whatever changes how files are built makes every output out of date: these files, the compiler
// options, and the installed packages (npm rewrites node_modules/.package-lock.json on each install).
const BUILT_BY = Math.max(
  ...['scripts/build.mjs', 'dashboard/build.mjs', 'tsconfig.json', 'dashboard/tsconfig.json', 'node_modules/.package-lock.json'].map(
    (path) => modified(at(path)) ?? 0,
  ),
);

/** Whether `output` exists and is newer than every one of `inputs` and than the build itself. */
function upToDate(output, inputs) {
  const made = modified(output);
  return made !== undefined && made >= BUILT_BY && inputs.every((input) => (modified(input) ?? Infinity) <= made);
}

function filesUnder(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

const isTypeScript = (path) => /\.tsx?$/.test(path) && !path.endsWith('.d.ts');
const outputOf = (source) => join(DIST, relative(ROOT, source)).replace(/\.tsx?$/, '.js');

/** Transpiles the TypeScript files under `dirs` whose output is out of date; removes outputs whose source is gone. */
async function transpile(dirs) {
  const sources = dirs.flatMap((dir) => filesUnder(at(dir))).filter(isTypeScript);
  const stale = sources.filter((source) => !upToDate(outputOf(source), [source]));
  if (stale.length > 0) {
    await build({
      absWorkingDir: ROOT,
      entryPoints: stale,
      outbase: ROOT,
      outdir: DIST,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      sourcemap: true,
      logLevel: 'warning',
    });
  }
  const outputs = new Set(sources.map(outputOf));
  for (const dir of dirs) {
    for (const file of filesUnder(join(DIST, dir)).filter((path) => path.endsWith('.js') && !outputs.has(path))) {
      rmSync(file);
      rmSync(`${file}.map`, { force: true });
    }
  }
}

/** Bundles the dashboard unless the last bundle is newer than everything it was made from. */
async function dashboard() {
  const lastInputs = existsSync(DASHBOARD_INPUTS) ? JSON.parse(readFileSync(DASHBOARD_INPUTS, 'utf8')) : undefined;
  if (lastInputs !== undefined && existsSync(join(DASHBOARD_OUTPUT, 'index.html')) && upToDate(DASHBOARD_INPUTS, lastInputs)) return;
  writeFileSync(DASHBOARD_INPUTS, JSON.stringify(await bundleDashboard()));
}

/** Bundles the server unless the last bundle is newer than everything it was made from. */
async function serverBundle() {
  const lastInputs = existsSync(SERVER_BUNDLE_INPUTS) ? JSON.parse(readFileSync(SERVER_BUNDLE_INPUTS, 'utf8')) : undefined;
  if (lastInputs !== undefined && existsSync(join(SERVER_BUNDLE, 'main.js')) && upToDate(SERVER_BUNDLE_INPUTS, lastInputs)) return;
  rmSync(SERVER_BUNDLE, { recursive: true, force: true });
  const { metafile } = await build({
    absWorkingDir: ROOT,
    entryPoints: SERVER_ENTRY_POINTS,
    outdir: SERVER_BUNDLE,
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: NOT_BUNDLED,
    plugins: [ownDirectories],
    // Node keeps the source of every module it loads: 3 MiB less held at idle. Names stay, for stack traces and the
    // packages that read them.
    minifyWhitespace: true,
    minifySyntax: true,
    // The CommonJS packages bundled call require() for Node's own modules.
    banner: { js: "import { createRequire as createRequireOfBundle } from 'node:module'; const require = createRequireOfBundle(import.meta.url);" },
    sourcemap: true,
    logLevel: 'warning',
    metafile: true,
  });
  writeFileSync(SERVER_BUNDLE_INPUTS, JSON.stringify(Object.keys(metafile.inputs).map((input) => join(ROOT, input))));
}

const all = process.argv.includes('--all');
await transpile(all ? [...SERVER, ...DEVELOPMENT] : SERVER);
await dashboard();
await serverBundle();
