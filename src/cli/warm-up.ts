import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../config/config.js';
import { COMPILE_CACHE_WRITABLE, writeCompileCache } from '../process/compile-cache.js';

/**
 * `verdict warm-up`: builds the server once on a scratch embedded store, listening nowhere, and writes
 * Node's compile cache (NODE_COMPILE_CACHE) of the code a start compiles, so that the next starts read
 * it instead of compiling: an image build runs it once. The operator's configuration is not read: the
 * code a default start loads is what is cached. Returns what it did, for the operator.
 */
export async function warmUp(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  if (args.length > 0) throw new ConfigError(`verdict warm-up takes no arguments, got '${args.join(' ')}'`);
  if (env.NODE_COMPILE_CACHE === undefined || env.NODE_COMPILE_CACHE === '') {
    throw new ConfigError('verdict warm-up writes the compile cache of NODE_COMPILE_CACHE: set it to the directory later starts will read');
  }
  if (!COMPILE_CACHE_WRITABLE) return `Node ${process.versions.node} keeps no compile cache (Node 22.10 and later do): nothing written`;
  const scratch = mkdtempSync(join(tmpdir(), 'verdict-warm-up-'));
  try {
    const config = loadConfig(['--store', 'embedded', '--data-dir', scratch, '--host', '127.0.0.1', '--port', '0', '--log-level', 'silent'], {});
    const { buildApp } = await import('../app.js');
    const app = await buildApp(config);
    await app.ready();
    const directory = writeCompileCache();
    await app.close();
    if (directory === undefined) throw new ConfigError(`Node could not open NODE_COMPILE_CACHE=${env.NODE_COMPILE_CACHE} as its compile cache: make it a directory this user may write`);
    return `the compile cache of a start is in ${directory}`;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
