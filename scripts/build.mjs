// Emits the JavaScript Node runs into dist/, redoing only what changed since the last run, so that
// `npm start` on an unchanged tree starts at once:
// - each TypeScript file transpiled on its own by esbuild (`tsc -b`, in `npm run build`, checks types),
//   which the tests import;
// - the command line, dist/src/cli.js, and the files the worker threads run, dist/workers/*.js, each
//   bundled with the server's modules it imports: Node loads a bundle's few files sooner than the
//   server's hundreds of modules (the packages stay outside them);
// - the dashboard bundled by dashboard/build.mjs.
//
//   node scripts/build.mjs         what `verdict start` needs: src, workers and the dashboard
//   node scripts/build.mjs --all   the tests and benchmarks too
//
// `npm ci` runs the first as `prepare`, with --omit=dev too: that is why esbuild and preact are
// production dependencies, and why a production install needs no TypeScript compiler.
import { build } from 'esbuild';
import { existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DASHBOARD_OUTPUT, bundleDashboard } from '../dashboard/build.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
const SERVER = ['src', 'workers'];
// dashboard/src: the tests import its modules directly.
const DEVELOPMENT = ['test', 'bench', 'dashboard/src', 'clients/node/src', 'examples'];
const DASHBOARD_INPUTS = join(DIST, '.dashboard-inputs.json');
// Bundled, not transpiled alone: the command line and the entries of the worker threads (see workers/entry-points.ts).
const BUNDLED = ['src/cli.ts', 'workers/evaluate.ts', 'workers/decision-log-writer.ts'];
const BUNDLE_INPUTS = join(DIST, '.bundle-inputs.json');
// The modules the bundles share, and those the command line imports only when it needs them.
const CHUNKS = join(DIST, 'chunks');

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

/**
 * Transpiles the TypeScript files under `dirs` whose output is out of date, but for those BUNDLED;
 * removes outputs whose source is gone.
 */
async function transpile(dirs) {
  const sources = dirs.flatMap((dir) => filesUnder(at(dir))).filter(isTypeScript);
  const stale = sources.filter((source) => !BUNDLED.map(at).includes(source) && !upToDate(outputOf(source), [source]));
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

/**
 * In a bundle every module's `import.meta.url` would be its bundle file's. Each module keeps the URL of
 * its own transpiled file instead, so that the files it names beside it (the package.json, the
 * dashboard, the worker threads' files) are found as they are without the bundle. The URL is written
 * relative to the bundle file, which works from the entries and their chunks alike because all lie
 * one folder below dist/.
 */
const ownModuleUrls = {
  name: 'own-module-urls',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      const contents = readFileSync(args.path, 'utf8');
      if (!contents.includes('import.meta.url')) return undefined;
      const fromBundleFolder = `../${relative(DIST, outputOf(args.path)).split(sep).join('/')}`;
      return { contents: contents.replaceAll('import.meta.url', `new URL(${JSON.stringify(fromBundleFolder)}, import.meta.url).href`), loader: 'ts' };
    });
  },
};

/** Bundles the BUNDLED entries unless the last bundles are newer than everything they were made from. */
async function bundles() {
  const lastInputs = existsSync(BUNDLE_INPUTS) ? JSON.parse(readFileSync(BUNDLE_INPUTS, 'utf8')) : undefined;
  if (lastInputs !== undefined && BUNDLED.every((entry) => existsSync(outputOf(at(entry)))) && upToDate(BUNDLE_INPUTS, lastInputs)) return;
  rmSync(CHUNKS, { recursive: true, force: true });
  const { metafile } = await build({
    absWorkingDir: ROOT,
    entryPoints: BUNDLED.map(at),
    outbase: ROOT,
    outdir: DIST,
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: true,
    logLevel: 'warning',
    metafile: true,
    plugins: [ownModuleUrls],
  });
  writeFileSync(BUNDLE_INPUTS, JSON.stringify(Object.keys(metafile.inputs).map((input) => join(ROOT, input))));
}

/** Bundles the dashboard unless the last bundle is newer than everything it was made from. */
async function dashboard() {
  const lastInputs = existsSync(DASHBOARD_INPUTS) ? JSON.parse(readFileSync(DASHBOARD_INPUTS, 'utf8')) : undefined;
  if (lastInputs !== undefined && existsSync(join(DASHBOARD_OUTPUT, 'index.html')) && upToDate(DASHBOARD_INPUTS, lastInputs)) return;
  writeFileSync(DASHBOARD_INPUTS, JSON.stringify(await bundleDashboard()));
}

const all = process.argv.includes('--all');
await transpile(all ? [...SERVER, ...DEVELOPMENT] : SERVER);
await bundles();
await dashboard();
