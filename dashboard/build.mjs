// Bundles the dashboard into dist/public/dashboard, which the server serves at /dashboard/: one script
// and one stylesheet bundled by esbuild, and the page that loads them. scripts/build.mjs runs it.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const source = (path) => fileURLToPath(new URL(path, import.meta.url));
export const DASHBOARD_OUTPUT = fileURLToPath(new URL('../dist/public/dashboard/', import.meta.url));

/** Bundles the dashboard; returns every file the bundle was made from (absolute paths). */
export async function bundleDashboard() {
  rmSync(DASHBOARD_OUTPUT, { recursive: true, force: true });
  mkdirSync(DASHBOARD_OUTPUT, { recursive: true });
  const { metafile } = await build({
    absWorkingDir: root,
    entryPoints: [source('src/main.tsx')],
    outdir: `${DASHBOARD_OUTPUT}assets`,
    bundle: true,
    minify: true,
    sourcemap: true,
    format: 'esm',
    target: 'es2022',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    logLevel: 'warning',
    metafile: true,
  });
  copyFileSync(source('index.html'), `${DASHBOARD_OUTPUT}index.html`);
  return [...Object.keys(metafile.inputs).map((input) => join(root, input)), source('index.html')];
}
