// Builds the dashboard into dist/public/dashboard, which the server serves at /dashboard/:
// one script and one stylesheet bundled by esbuild, and the page that loads them.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = (path) => fileURLToPath(new URL(path, import.meta.url));
const output = fileURLToPath(new URL('../dist/public/dashboard/', import.meta.url));

rmSync(output, { recursive: true, force: true });
mkdirSync(output, { recursive: true });
await build({
  entryPoints: [source('src/main.tsx')],
  outdir: `${output}assets`,
  bundle: true,
  minify: true,
  sourcemap: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  logLevel: 'warning',
});
copyFileSync(source('index.html'), `${output}index.html`);
