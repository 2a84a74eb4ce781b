import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import YAML from 'yaml';
import type { Policy } from '../schemas/policy.js';
import { ConfigError, loadConfig } from '../config/config.js';
import { adminRequest } from './admin-request.js';
import { openStore } from '../store/open.js';
import { PRIVATE_DIRECTORY, PRIVATE_FILE } from '../private-files.js';

const USAGE = 'usage: verdict policies export <dir> [--url <server>] | [--data-dir <dir>] | [--mongodb-uri <uri> [--mongodb-db <name>]]';

/** GET /admin/policies of the server at `url` (see adminRequest). */
async function fromServer(url: string, env: NodeJS.ProcessEnv): Promise<Policy[]> {
  const { status, text } = await adminRequest(url, env, '/admin/policies');
  if (status !== 200) throw new ConfigError(`${url} answered ${status} to GET /admin/policies: ${text}`);
  return JSON.parse(text) as Policy[];
}

async function fromStore(args: string[], env: NodeJS.ProcessEnv): Promise<Policy[]> {
  const config = loadConfig(args, env);
  if (config.store === 'embedded' && !existsSync(config.dataDir)) throw new ConfigError(`no data directory at ${config.dataDir}`);
  const store = await openStore(config, { auditValues: config.auditValues });
  try {
    return (await store.loadPolicies()).policies;
  } finally {
    await store.close();
  }
}

/**
 * `verdict policies export <dir>`: writes the policies of a running server (`--url`, default the
 * local one; the admin key from ADMIN_API_KEY) or of a store (`--data-dir`, `--mongodb-uri`) as one
 * YAML file per policy, numbered so that the files' order is the policies' creation order, the
 * order `--policies` reads them in. Refuses a directory that already holds policy files.
 */
export async function exportPolicies(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: { url: { type: 'string' }, 'data-dir': { type: 'string' }, 'mongodb-uri': { type: 'string' }, 'mongodb-db': { type: 'string' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new ConfigError(`${(error as Error).message}\n${USAGE}`);
  }
  const [dir, ...extra] = parsed.positionals;
  if (dir === undefined || extra.length > 0) throw new ConfigError(USAGE);
  const { url, ...storeOptions } = parsed.values;
  const storeArgs = Object.entries(storeOptions).flatMap(([name, value]) => [`--${name}`, value as string]);
  if (url !== undefined && storeArgs.length > 0) throw new ConfigError(`--url and a store (${storeArgs[0]}) are two sources: give one\n${USAGE}`);
  const policies = storeArgs.length > 0 ? await fromStore(storeArgs, env) : await fromServer(url ?? 'http://127.0.0.1:8421', env);
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIRECTORY });
  const existing = readdirSync(dir).filter((name) => /\.(json|ya?ml)$/.test(name));
  if (existing.length > 0) throw new ConfigError(`${dir} already holds policy files (${existing.slice(0, 3).join(', ')}): export into an empty directory`);
  const width = Math.max(3, String(policies.length).length);
  policies.forEach((policy, index) => {
    writeFileSync(join(dir, `${String(index + 1).padStart(width, '0')}-${policy.name}.yaml`), YAML.stringify(policy), { mode: PRIVATE_FILE });
  });
  console.log(`wrote ${policies.length} ${policies.length === 1 ? 'policy' : 'policies'} to ${dir}`);
}
