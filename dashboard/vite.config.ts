import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/** The dashboard is built into dist/public/dashboard, which the server serves at /dashboard/. */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/dashboard/',
  logLevel: 'warn',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: fileURLToPath(new URL('../dist/public/dashboard', import.meta.url)),
    emptyOutDir: true,
    assetsInlineLimit: 0,
  },
});
