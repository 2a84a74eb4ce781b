import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { ConfigError, type Config } from '../../config/config.js';
import { loadConfigWithDotenv } from '../dotenv/load.js';
import { openStore } from '../../store/open.js';
import { EunomiaDatabase } from './database.js';
import { importEunomia, type ImportCounts } from './import.js';

/** Where an Eunomia server keeps its database, relative to the directory it runs in. */
export const EUNOMIA_DATABASE = './.db/eunomia_db.sqlite';

const plural = (count: number, one: string, many: string) => `${count} ${count === 1 ? one : many}`;

function storeDescription(config: Config): string {
  if (config.store === 'embedded') return `the embedded store in ${config.dataDir}`;
  return `the ${config.store} store (database ${config.mongodbDatabase})`;
}

function summary(counts: ImportCounts, one: string, many: string): string {
  const parts = [`${counts.imported} imported`];
  if (counts.unchanged > 0) parts.push(`${counts.unchanged} already in Verdict as in Eunomia`);
  if (counts.refused > 0) parts.push(`${counts.refused} not imported (see above)`);
  return `${plural(counts.imported + counts.unchanged + counts.refused, one, many)}: ${parts.join(', ')}`;
}

/**
 * `verdict import eunomia [path] [flags]`: the policies and entities of an Eunomia database, into the
 * store the flags name (as `verdict start` would open it). Exit code 0 when everything the database
 * holds is now in Verdict as Eunomia had it, 1 when something was not imported (each one reported).
 */
export async function importEunomiaCommand(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const [first] = args;
  const givenPath = first !== undefined && !first.startsWith('-');
  const path = givenPath ? first : EUNOMIA_DATABASE;
  const { config } = loadConfigWithDotenv(givenPath ? args.slice(1) : args, env);
  if (!existsSync(path)) {
    throw new ConfigError(`no Eunomia database at ${path}${givenPath ? '' : ` (where Eunomia keeps it, relative to the directory it runs in); give its path: verdict import eunomia <path>`}`);
  }
  let database: EunomiaDatabase;
  try {
    database = new EunomiaDatabase(path);
  } catch (error) {
    throw new ConfigError(`cannot read ${path} as an SQLite database: ${(error as Error).message}`);
  }
  try {
    if (!database.hasTable('policies') && !database.hasTable('entities')) {
      throw new ConfigError(`${path} holds neither Eunomia's policies nor its entities (no table 'policies' or 'entities')`);
    }
    console.log(`Importing the Eunomia database ${path} into ${storeDescription(config)}`);
    const store = await openStore(config, { auditValues: config.auditValues });
    try {
      const by = { actor: 'verdict import eunomia', client: 'local', requestId: randomUUID(), route: `verdict import eunomia ${path}` };
      const result = await importEunomia(database, store, config, by, (line) => console.log(line));
      const { policies, entities } = result;
      const refused = policies.refused + entities.refused;
      if (policies.imported + entities.imported === 0) {
        console.log(
          `Nothing new to import: ${plural(policies.unchanged, 'policy', 'policies')} and ${plural(entities.unchanged, 'entity', 'entities')} already in Verdict as in Eunomia` +
            (refused > 0 ? `; ${refused} not imported (see above)` : ''),
        );
      } else {
        console.log(summary(policies, 'policy', 'policies'));
        console.log(summary(entities, 'entity', 'entities'));
      }
      if (policies.imported > 0 && config.operatorStyle !== 'eunomia') {
        console.log("Eunomia's Python SDK reads policies only from a server started with --operator-style eunomia (OPERATOR_STYLE=eunomia)");
      }
      return refused === 0 ? 0 : 1;
    } finally {
      await store.close();
    }
  } finally {
    database.close();
  }
}
