import { fileURLToPath } from 'node:url';

/**
 * Where the build puts what the server reads beside its code. This module is one directory below dist/ however it
 * was built: file by file (dist/src/) or bundled (dist/bundle/, see scripts/build.mjs); its paths count on that.
 */
export const DASHBOARD_ROOT = fileURLToPath(new URL('../public/dashboard/', import.meta.url));
