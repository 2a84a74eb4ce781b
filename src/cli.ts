#!/usr/bin/env node
import { checkAdminExposure, ConfigError, loadConfig } from './config/config.js';
import { dotenvLogLine, loadConfigWithDotenv } from './cli/dotenv/load.js';
import { isLoopbackHost } from './loopback.js';
import { commandHelp, optionsTable } from './cli/help.js';
import { VERSION } from './version.js';
import { isSupervisor, superviseProcesses } from './process/cluster.js';
import type { FastifyInstance } from 'fastify';
import { Listeners } from './process/listeners.js';
import { answerWhileStarting } from './http/starting.js';
import { metricsListener } from './http/metrics.js';
import { closeOnSignals } from './process/shutdown.js';
import { probe } from './cli/healthcheck.js';
import { newKey, ROLES, type Role } from './admin-keys.js';
import { parseArgs } from 'node:util';
import { writeCompileCache } from './process/compile-cache.js';
import { QuietSettling, settledLogFields } from './settle-memory.js';

/** --help wraps its descriptions to fit this many columns, or a wider terminal. */
const HELP_WIDTH = 120;

const USAGE = `Usage: verdict <command> [flags]

Commands:
  start        serve the decision API
  healthcheck  exit 0 when the server these flags describe is ready (GET /ready), else 1;
               with --live, when it is alive (GET /health). For container health checks without curl.
  key          print a new random admin key and the line that gives it a name and role in the
               --admin-keys-file: verdict key --name NAME [--role admin|read] (default role: admin)
  import entities <file.jsonl>
               register the entities of a JSON Lines file (one registration body a line) with
               the running server these flags describe, in all-or-nothing batches of at most
               --bulk-register-max-entities; the admin key is read from ADMIN_API_KEY
  import eunomia [path]
               copy the policies and entities of an Eunomia database (default ./.db/eunomia_db.sqlite,
               opened read-only) into the store these flags describe, in Eunomia's creation order;
               what Verdict already holds is kept, so running it again imports only what is new.
               Exit 0 when everything is in Verdict as in Eunomia, else 1 (each item not imported is named)
  test [paths...] [--format text|tap|junit] [--schemas <file>]
               run policy test files (*.test.yaml, *.test.yml, *.test.json; directories are searched)
               offline, on the server's engine; exit 0 when every case passes, else 1.
               With attribute schemas (--schemas, else a schemas.json beside a test file or its
               policy files), warn of policies they contradict and fail cases that break them.
               Their schema: docs/policy-test.schema.json.
  policies export <dir> [--url <server>] | [--data-dir <dir>] | [--mongodb-uri <uri>]
               write the policies of a running server (default http://127.0.0.1:8421; the admin key
               from ADMIN_API_KEY) or of a store as YAML files, numbered in creation order, for --policies.
  impact [<policy file>...] [--delete <name>]... [--url <server>] [--decision-log <lines>]
         [--fail-on deny-to-allow|allow-to-deny|any]
               preview what writing these policies (and deleting those named) would do to the checks
               the running server decided lately (its recent checks, or with --decision-log the newest
               lines of its decision log file), without writing; exit 1 when a change crosses --fail-on
  impact --before <policy dir> --after <policy dir> --replay <decision log file>... [--lines <n>]
         [--format text|json] [--fail-on ...]
               the same offline: the decision logs of any number of processes, replayed against two
               policy directories
  warm-up      build the server once, serving nothing, and write Node's compile cache (the directory
               NODE_COMPILE_CACHE names, Node 22.10 or later) so that later starts are sooner: for image builds
  version      print the version
  help         print this help

Flags of start, healthcheck and import (each also read from the variable named; a flag wins over its variable):
${optionsTable(Math.max(HELP_WIDTH, process.stdout.columns ?? 0))}
`;

async function start(args: string[]): Promise<void> {
  const { config, dotenv } = loadConfigWithDotenv(args, process.env);
  // Before any process of a cluster starts, and before anything listens.
  checkAdminExposure(config);
  if (isSupervisor(config.processes)) {
    superviseProcesses(config.processes);
    return;
  }
  const listeners = await Listeners.open(config, answerWhileStarting);
  let app: FastifyInstance | undefined;
  closeOnSignals(config, listeners, () => app);
  // Loaded only here: `healthcheck`, `--help` and configuration errors answer without loading the server.
  const { buildApp } = await import('./app.js');
  app = await buildApp(config);
  listeners.serve(app.routing, metricsListener(app.metrics, app.routing));
  if (dotenv !== undefined) app.log.info(...dotenvLogLine(dotenv));
  app.log.info(
    {
      ...listeners.addresses,
      store: config.store,
      dataDir: config.dataDir,
      adminAuthRequired: config.adminAuthRequired,
      adminAuth: config.adminAuthReason,
      evaluation: app.evaluation,
      workers: app.workers,
    },
    'Verdict is ready',
  );
  if (!config.adminAuthRequired && !isLoopbackHost(config.host)) {
    app.log.warn(`the admin interface is open to every client that reaches ${config.host} (--allow-open-admin): whoever does may change every policy`);
  }
  writeCompileCache();
  if (config.settleMemory) new QuietSettling({ workedSince: (epochMs) => app!.checksSince(epochMs) > 0, settled: (settled) => app!.log.info({ ...settledLogFields(settled), thread: 'front' }, 'settled memory') }).start();
}

async function healthcheck(args: string[]): Promise<void> {
  const live = args.includes('--live');
  const { config } = loadConfigWithDotenv(
    args.filter((arg) => arg !== '--live'),
    process.env,
  );
  const { healthy, message } = await probe(config, live ? '/health' : '/ready');
  if (healthy) console.log(message);
  else console.error(`verdict: not ${live ? 'alive' : 'ready'}: ${message}`);
  process.exitCode = healthy ? 0 : 1;
}

/** `verdict key`: a new key for its holder, and the line (its digest, never the key) for the keys file. */
function printNewKey(args: string[]): void {
  let values: { name?: string; role?: string };
  try {
    values = parseArgs({ args, options: { name: { type: 'string' }, role: { type: 'string', default: 'admin' } }, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  if (values.name === undefined) throw new ConfigError("verdict key needs --name NAME, the name the audit trail will give the key's writes");
  if (!(ROLES as readonly string[]).includes(values.role!)) throw new ConfigError(`--role must be one of ${ROLES.join(', ')}, got '${values.role}'`);
  let created: { key: string; line: string };
  try {
    created = newKey(values.name, values.role as Role);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  console.log(`# The key for ${values.name} (role ${values.role}). Give it to its holder; Verdict keeps only its digest:`);
  console.log(created.key);
  console.log('# The line to add to the --admin-keys-file:');
  console.log(created.line);
}

async function importCommand(args: string[]): Promise<void> {
  const [what, file, ...flags] = args;
  if (what === 'eunomia') {
    const { importEunomiaCommand } = await import('./cli/import-eunomia/command.js');
    process.exitCode = await importEunomiaCommand(args.slice(1), process.env);
    return;
  }
  if (what !== 'entities' || file === undefined || file.startsWith('-')) {
    throw new ConfigError("usage: verdict import entities <file.jsonl> [flags] | verdict import eunomia [path] [flags]; run 'verdict import --help'");
  }
  // A client of a server: its target, to which it sends the admin key, comes from flags and the
  // environment only, never from a .env it happens to be run beside.
  const config = loadConfig(flags, process.env);
  const { importEntities } = await import('./cli/import-entities.js');
  const { imported, seconds } = await importEntities(file, config, (count, line) =>
    console.log(`imported ${count} entities (to line ${line})`),
  );
  console.log(`imported ${imported} entities from ${file} in ${seconds.toFixed(1)} s (${Math.round(imported / seconds)} entities/s)`);
}

/** The commands whose flags are the options table of `--help`. */
const TAKES_START_FLAGS = ['start', 'healthcheck', 'import'];

async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  const help = command !== undefined && args.some((arg) => arg === '--help' || arg === '-h') ? commandHelp(USAGE, command ?? '', TAKES_START_FLAGS.includes(command ?? '')) : undefined;
  if (help !== undefined) {
    console.log(help);
    return;
  }
  switch (command) {
    case 'start':
      return start(args);
    case 'healthcheck':
      return healthcheck(args);
    case 'key':
      return printNewKey(args);
    case 'import':
      return importCommand(args);
    case 'policies': {
      const [subcommand, ...rest] = args;
      if (subcommand !== 'export') throw new ConfigError(`unknown command 'policies ${subcommand ?? ''}'; run 'verdict --help'`);
      const { exportPolicies } = await import('./cli/policies-export.js');
      return exportPolicies(rest, process.env);
    }
    case 'impact': {
      const { impactCommand } = await import('./cli/impact.js');
      process.exitCode = await impactCommand(args, process.env);
      return;
    }
    case 'test': {
      const { policyTest } = await import('./cli/policy-tests/command.js');
      process.exitCode = policyTest(args);
      return;
    }
    case 'warm-up': {
      const { warmUp } = await import('./cli/warm-up.js');
      console.log(await warmUp(args, process.env));
      return;
    }
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
