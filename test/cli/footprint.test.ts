import t from 'tap';
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { CLI, freePort } from '../helpers/child.js';

/**
 * `verdict healthcheck` runs once per probe where only a Unix socket is open, `--help` and a refused
 * configuration should answer at once: none of them may load the server (Fastify, the store, the
 * pool), which costs several times their own start. Each run here reports, as it exits, whether
 * Fastify's modules were loaded.
 */

function serverLoaded(imports: string, args: string[]): Promise<string> {
  const script = `
    import { createRequire } from 'node:module';
    const cache = createRequire(import.meta.url).cache;
    process.on('exit', () => console.log('server loaded: ' + Object.keys(cache).some((path) => path.includes('/node_modules/fastify/'))));
    process.argv.splice(2, Infinity, ...${JSON.stringify(args)});
    await import(${JSON.stringify(imports)});
  `;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'ignore'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.on('close', () => resolve(/server loaded: (true|false)/.exec(stdout)?.[1] ?? `no report in ${JSON.stringify(stdout)}`));
  });
}

t.test('healthcheck, --help and a configuration error do not load the server', async (t) => {
  const cli = pathToFileURL(CLI).href;
  const closed = String(await freePort());
  t.equal(await serverLoaded(cli, ['healthcheck', '--port', closed]), 'false', 'healthcheck');
  t.equal(await serverLoaded(cli, ['healthcheck', '--live', '--port', closed]), 'false', 'healthcheck --live');
  t.equal(await serverLoaded(cli, ['--help']), 'false', '--help');
  t.equal(await serverLoaded(cli, ['start', '--port', 'eighty']), 'false', 'a refused configuration');
  t.equal(await serverLoaded(new URL('app.js', cli).href, []), 'true', 'the check sees the server when it is loaded');
});
