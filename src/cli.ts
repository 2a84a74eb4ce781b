#!/usr/bin/env node
import { buildApp } from './app.js';
import { ConfigError, loadConfig, START_OPTIONS } from './config.js';
import { VERSION } from './version.js';
import { isSupervisor, superviseProcesses } from './cluster.js';

const USAGE = `Usage: verdict <command> [flags]

Commands:
  start      serve the decision API
  version    print the version
  help       print this help

Flags of start (each also read from the variable named; a flag wins over its variable):
${Object.entries(START_OPTIONS)
  .map(([name, option]) => `  --${name.padEnd(26)}${option.env.padEnd(26)}${option.help} (default: ${option.default})`)
  .join('\n')}
  ${''.padEnd(26)}ADMIN_API_KEY             the admin key, sent by clients in the WAY-API-KEY header
`;

async function start(args: string[]): Promise<void> {
  const config = loadConfig(args, process.env);
  if (isSupervisor(config.processes)) {
    superviseProcesses(config.processes);
    return;
  }
  const app = await buildApp(config);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
  await app.listen({ host: config.host, port: config.port });
  app.log.info({ dataDir: config.dataDir, adminAuthRequired: config.adminAuthRequired }, 'Verdict is ready');
}

async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  switch (command) {
    case 'start':
      return start(args);
    case 'version':
    case '--version':
      console.log(VERSION);
      return;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE);
      return;
    default:
      throw new ConfigError(`unknown command '${command}'; run 'verdict --help'`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  console.error(`verdict: ${message}`);
  process.exit(error instanceof ConfigError ? 2 : 1);
});
