import t from 'tap';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { DATABASE_FILE } from '../../src/store/embedded/database.js';
import { startVerdict } from '../helpers/child.js';

// The real CLI in a child process takes a stream of policy and entity writes and is killed with
// SIGKILL at a random moment, several times, on one data directory. After every kill the store
// must pass SQLite's integrity check, every acknowledged write must be there, and every write that
// was in flight must be there in full or not at all; so must each write's audit record.

const KILLS = 4;
const WRITERS = 6;
const REGISTRY = '/admin/fetchers/registry/entities';

interface Write {
  kind: 'policy' | 'entity';
  key: string;
  body: Record<string, unknown>;
}

function write(sequence: number): Write {
  if (sequence % 2 === 0) {
    const key = `policy-${sequence}`;
    const rules = [1, 2, 3].map((rule) => ({
      name: `rule-${rule}`,
      description: `rule ${rule} of write ${sequence}`,
      effect: rule === 2 ? 'deny' : 'allow',
      principal_conditions: [{ path: 'attributes.level', operator: 'gte', value: sequence + rule }],
      resource_conditions: [{ path: 'attributes.tags', operator: 'contains', value: `tag-${sequence}` }],
      actions: ['read', `act-${sequence}`],
    }));
    return { kind: 'policy', key, body: { version: '1.0', name: key, description: `written ${sequence}`, rules, default_effect: 'deny' } };
  }
  const key = `entity:${sequence}`;
  // Attributes in key order, the order the registry answers in.
  return { kind: 'entity', key, body: { uri: key, type: 'principal', attributes: { nested: { deep: [sequence] }, sequence, tags: [`tag-${sequence}`] } } };
}

async function post(url: string, { kind, body }: Write): Promise<number> {
  const response = await request(url + (kind === 'policy' ? '/admin/policies' : REGISTRY), {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  await response.body.dump();
  return response.statusCode;
}

/** What the store holds for a write, as the API returns it (undefined: absent). */
async function stored(url: string, { kind, key }: Write): Promise<unknown> {
  const path = kind === 'policy' ? `/admin/policies/${key}` : `${REGISTRY}/${encodeURIComponent(key)}`;
  const response = await request(url + path);
  const body = await response.body.json();
  if (response.statusCode === 404) return undefined;
  if (response.statusCode !== 200) throw new Error(`GET ${path}: ${response.statusCode}`);
  if (kind === 'policy') return body;
  const entity = body as { uri: string; type: string; attributes: { key: string; value: unknown }[] };
  return { uri: entity.uri, type: entity.type, attributes: Object.fromEntries(entity.attributes.map(({ key, value }) => [key, value])) };
}

/** Every audit record the server holds, by target. */
async function auditRecordsByTarget(url: string): Promise<Map<string, { operation: string; after: unknown }[]>> {
  const byTarget = new Map<string, { operation: string; after: unknown }[]>();
  let cursor: string | null = null;
  do {
    const response = await request(`${url}/admin/audit?limit=1000${cursor === null ? '' : `&cursor=${cursor}`}`);
    const page = (await response.body.json()) as { records: { target: string; operation: string; after: unknown }[]; next_cursor: string | null };
    for (const record of page.records) byTarget.set(record.target, [...(byTarget.get(record.target) ?? []), record]);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return byTarget;
}

const targetOf = ({ kind, key }: Write) => `${kind}:${key}`;

function integrity(dataDir: string): string {
  // fileMustExist: a store the server never wrote must fail the test, not be created empty and pass.
  const db = new Database(join(dataDir, DATABASE_FILE), { fileMustExist: true });
  try {
    return db.pragma('integrity_check', { simple: true }) as string;
  } finally {
    db.close();
  }
}

t.test('acknowledged writes survive SIGKILL; writes in flight are all there or not at all', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'verdict-crash-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const SERVER_ARGUMENTS = ['--store', 'embedded', '--data-dir', dataDir, '--log-level', 'warn'];
  const acknowledged: Write[] = [];
  const inFlight: Write[] = [];
  let sequence = 0;

  for (let kill = 0; kill < KILLS; kill++) {
    const server = await startVerdict(t, SERVER_ARGUMENTS);
    // The kill comes after a random number of acknowledgements, however fast the machine is.
    const killAfter = acknowledged.length + 5 + Math.floor(Math.random() * 60);
    let reachedKillPoint!: () => void;
    const killPoint = new Promise<void>((resolve) => (reachedKillPoint = resolve));
    let killed = false;
    const writer = async () => {
      while (!killed) {
        const next = write(sequence++);
        try {
          const status = await post(server.url, next);
          if (status !== 200) throw new Error(`${next.key}: ${status}`);
          acknowledged.push(next);
          if (acknowledged.length >= killAfter) reachedKillPoint();
        } catch (error) {
          if (!killed) throw error;
          inFlight.push(next);
        }
      }
    };
    const writers = Array.from({ length: WRITERS }, writer);
    await Promise.race([killPoint, Promise.all(writers)]);
    killed = true;
    server.process.kill('SIGKILL');
    await Promise.all([...writers, server.exited]);
    t.equal(integrity(dataDir), 'ok', `after kill ${kill + 1}: the store passes the integrity check`);
  }

  const server = await startVerdict(t, SERVER_ARGUMENTS);
  t.ok(acknowledged.length > KILLS, `${acknowledged.length} writes acknowledged, ${inFlight.length} in flight at a kill`);
  let missing = 0;
  for (const sent of acknowledged) {
    const found = await stored(server.url, sent);
    if (JSON.stringify(found) !== JSON.stringify(sent.body)) {
      missing++;
      t.fail(`acknowledged ${sent.key} is intact`, { found, wanted: sent.body });
    }
  }
  t.equal(missing, 0, 'every acknowledged write is there, intact');
  t.ok(inFlight.length > 0, 'the kills caught writes in flight');
  let inFlightStored = 0;
  for (const sent of inFlight) {
    const found = await stored(server.url, sent);
    if (found !== undefined) inFlightStored++;
    t.ok(found === undefined || JSON.stringify(found) === JSON.stringify(sent.body), `in-flight ${sent.key}: all or nothing`);
  }
  t.comment(`${inFlightStored} of ${inFlight.length} writes in flight at a kill were stored in full, the others not at all`);
  const policies = (await (await request(`${server.url}/admin/policies`)).body.json()) as unknown[];
  const count = (await (await request(`${server.url}${REGISTRY}/$count`)).body.json()) as number;
  t.ok(policies.length + count >= acknowledged.length, 'no acknowledged write was lost from the lists either');
  t.ok(policies.length + count <= acknowledged.length + inFlight.length, 'and nothing appeared that was never sent');

  const audit = await auditRecordsByTarget(server.url);
  let unaudited = 0;
  for (const sent of acknowledged) {
    const records = audit.get(targetOf(sent)) ?? [];
    const after = sent.kind === 'policy' ? sent.body : { type: 'principal', keys: Object.keys(sent.body.attributes as object) };
    if (records.length !== 1 || records[0]!.operation !== `${sent.kind}.create` || JSON.stringify(records[0]!.after) !== JSON.stringify(after)) {
      unaudited++;
      t.fail(`acknowledged ${sent.key} has exactly its one audit record`, { records });
    }
  }
  t.equal(unaudited, 0, 'every acknowledged write has its one audit record, intact');
  for (const sent of inFlight) {
    const present = (await stored(server.url, sent)) !== undefined;
    t.equal(audit.get(targetOf(sent))?.length ?? 0, present ? 1 : 0, `in-flight ${sent.key}: its record is there exactly when the write is`);
  }
  t.equal([...audit.values()].flat().length, policies.length + count, 'no record without its write');
});
