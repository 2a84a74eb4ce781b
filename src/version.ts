import { createRequire } from 'node:module';

// One directory below dist/ however it was built (see build-output.ts).
const packageJson = createRequire(import.meta.url)('../../package.json') as { version: string };

export const VERSION: string = packageJson.version;
