import { API_KEY_HEADER } from '../schemas/wire.js';
import { createReadStream } from 'node:fs';
import type { Agent } from 'node:http';
import { http } from '../node-http.js';
import { createInterface } from 'node:readline';
import type { Config } from '../config/config.js';
import { describeTarget, serverTarget } from './healthcheck.js';

/** Where `verdict import entities` sends its batches: the registry's all-or-nothing bulk registration. */
export const BULK_REGISTRATION_PATH = '/admin/fetchers/registry/entities/$bulk';

/** The import stopped; the message says at which line, why, and what was imported before. */
export class ImportFailed extends Error {}

/** Lines of the file waiting to be sent together, as the JSON texts they hold. */
interface Batch {
  lineNumbers: number[];
  texts: string[];
  bytes: number;
}

interface Answer {
  status: number;
  body: unknown;
}

const emptyBatch = (): Batch => ({ lineNumbers: [], texts: [], bytes: 2 });

function post(config: Config, agent: Agent, body: string): Promise<Answer> {
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
  if (config.adminApiKey !== '') headers[API_KEY_HEADER] = config.adminApiKey;
  const target = serverTarget(config);
  return new Promise((resolve, reject) => {
    const outgoing = http.request({ ...target, agent, method: 'POST', path: BULK_REGISTRATION_PATH, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // not JSON: keep the text for the message
        }
        resolve({ status: response.statusCode ?? 0, body: parsed });
      });
    });
    outgoing.on('error', (error) => reject(new ImportFailed(`cannot reach Verdict at ${describeTarget(target)}: ${error.message}`)));
    outgoing.end(body);
  });
}

/** The server's refusal of a batch, told by the file's line numbers instead of the batch's item indexes. */
function refusal(answer: Answer, batch: Batch): string {
  const lineOf = (item: unknown) => batch.lineNumbers[Number(item)];
  const detail = (answer.body as { detail?: unknown } | undefined)?.detail;
  if (typeof detail === 'string') {
    const item = /^Item (\d+): (.*)$/s.exec(detail);
    if (item !== null && lineOf(item[1]) !== undefined) {
      // A uri given twice in the batch: the server names the other item by its index in the batch.
      const twice = /^(.*) is also item (\d+) of this call$/s.exec(item[2]!);
      const message = twice !== null && lineOf(twice[2]) !== undefined ? `${twice[1]} is also on line ${lineOf(twice[2])}` : item[2];
      return `line ${lineOf(item[1])}: ${message}`;
    }
  }
  if (Array.isArray(detail) && detail.length > 0) {
    return detail
      .map((issue: { loc: (string | number)[]; msg: string }) => {
        const [, item, ...field] = issue.loc;
        const where = lineOf(item) === undefined ? issue.loc.join('.') : `line ${lineOf(item)}`;
        return `${where}: ${field.length > 0 ? `${field.join('.')}: ` : ''}${issue.msg}`;
      })
      .join('; ');
  }
  const first = batch.lineNumbers[0];
  const last = batch.lineNumbers[batch.lineNumbers.length - 1];
  return `lines ${first}-${last}: the server answered ${answer.status} ${typeof detail === 'string' ? detail : JSON.stringify(answer.body)}`;
}

export interface ImportReport {
  imported: number;
  seconds: number;
}

/**
 * Registers the entities of a JSON Lines file (one `POST .../entities` body a line; blank lines
 * skipped) with the server `config` describes, in batches of at most `bulkRegisterMaxEntities`
 * entities and `bodyLimit` bytes, one at a time. Each batch is registered whole or not at all, so a
 * failure leaves every earlier batch imported and nothing from the failing batch on. Calls
 * `progress` after each batch.
 */
export async function importEntities(
  file: string,
  config: Config,
  progress: (imported: number, lastLine: number) => void,
): Promise<ImportReport> {
  const startedAt = performance.now();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let imported = 0;
  let batch = emptyBatch();
  const sofar = () => (imported === 0 ? 'nothing was imported' : `${imported} entities before it were imported`);

  const send = async () => {
    if (batch.texts.length === 0) return;
    const answer = await post(config, agent, `[${batch.texts.join(',')}]`);
    if (answer.status !== 200) {
      throw new ImportFailed(`${refusal(answer, batch)} (${sofar()}; nothing from line ${batch.lineNumbers[0]} on)`);
    }
    imported += batch.texts.length;
    progress(imported, batch.lineNumbers[batch.lineNumbers.length - 1]!);
    batch = emptyBatch();
  };

  try {
    const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
    let lineNumber = 0;
    for await (const line of lines) {
      lineNumber++;
      const text = line.trim();
      if (text === '') continue;
      try {
        JSON.parse(text);
      } catch (error) {
        throw new ImportFailed(`line ${lineNumber}: not valid JSON (${(error as Error).message}) (${sofar()}; nothing from line ${batch.lineNumbers[0] ?? lineNumber} on)`);
      }
      const bytes = Buffer.byteLength(text) + 1;
      if (batch.texts.length === config.bulkRegisterMaxEntities || (batch.texts.length > 0 && batch.bytes + bytes > config.bodyLimit)) {
        await send();
      }
      batch.lineNumbers.push(lineNumber);
      batch.texts.push(text);
      batch.bytes += bytes;
    }
    await send();
  } catch (error) {
    if (error instanceof ImportFailed) throw error;
    throw new ImportFailed(`cannot read ${file}: ${(error as Error).message}`);
  } finally {
    agent.destroy();
  }
  return { imported, seconds: (performance.now() - startedAt) / 1000 };
}
