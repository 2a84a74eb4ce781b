/**
 * What the heaviest requests Verdict accepts cost the checks sent meanwhile: `npm run build && node
 * dist/bench/heavy-requests.js`. One Verdict (default flags, embedded store) holds policies made to
 * reach the answer and work budgets: plans coarsened to --max-plan-size and a /plan/bulk of as many
 * as --max-answer-size holds, a /check/bulk?explain=true of as many explanations as it holds, the
 * same past it (refused once the budget is spent), a validation that takes its whole work limit,
 * and a 1,000-item /check/bulk for comparison. For each, one connection sends it again and again
 * for BENCH_SECONDS (default 5) while another sends /check one after another; the latency of those
 * checks is printed beside the same checks' on the idle server, measured in the same run, as
 * ratios of medians (and of the 99th percentiles and maxima). BENCH_RUNS (default 2) runs; medians.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { startVerdict, stop } from './server.js';
import { DEFAULT_CONFIG } from '../src/config/config.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const RUNS = Number(process.env.BENCH_RUNS ?? 2);

const eq = (path: string, value: unknown) => ({ path, operator: '==', value });
const CHECK = { principal: { attributes: { team: 'probe' } }, resource: { attributes: { owner: 'probe' } }, action: 'read' };

/**
 * Allow rules of four conditions alternating with deny rules, for action `plan`: each deny rule is
 * exempted by every allow rule before it, so the exact plan grows as their product and is cut to
 * --max-plan-size (coarsened) while the rules' own conditions fit.
 */
const ALTERNATING = {
  name: 'alternating',
  rules: Array.from({ length: 450 }, (_, index) => [
    {
      name: `grant-${index}`,
      effect: 'allow',
      resource_conditions: [eq(`attributes.owner${index}`, 'alice'), eq(`attributes.kind${index}`, 'doc'), eq(`attributes.area${index}`, 'eu'), eq(`attributes.level${index}`, index)],
      actions: ['plan'],
    },
    { name: `denial-${index}`, effect: 'deny', resource_conditions: [eq(`attributes.flag${index}`, true)], actions: ['plan'] },
  ]).flat(),
};

/** A thousand rules for action `explain`, each failing on the principal's team: every explanation lists them all. */
const TEAMS = {
  name: 'teams',
  rules: Array.from({ length: 1000 }, (_, index) => ({ name: `team-${index}`, effect: 'allow', principal_conditions: [eq('attributes.team', `team-${index}`)], actions: ['explain'] })),
};

/**
 * A policy of about 1 MB whose validation takes the whole work limit: a thousand rules of one
 * action sharing fifteen conditions, each with one of its own, so every rule is compared with every
 * rule before it.
 */
const SHADOWING = {
  name: 'shadowing',
  rules: Array.from({ length: 1000 }, (_, index) => ({
    name: `r${index}`,
    effect: 'allow',
    principal_conditions: [...Array.from({ length: 15 }, (_, position) => eq(`attributes.a${position}`, position)), eq('attributes.z', index)],
    actions: ['validate'],
  })),
};

interface Heavy {
  name: string;
  path: string;
  body: unknown;
  /** The status it is expected to answer. */
  status: number;
}

interface Answer {
  status: number;
  text: string;
  millis: number;
}

async function send(url: string, dispatcher: Agent, path: string, body: unknown): Promise<Answer> {
  const started = performance.now();
  const response = await request(`${url}${path}`, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await response.body.text();
  return { status: response.statusCode, text, millis: performance.now() - started };
}

/** The heavy requests, sized from what one plan and one explanation come to on this server. */
async function heavyRequests(url: string, dispatcher: Agent): Promise<Heavy[]> {
  for (const policy of [ALTERNATING, TEAMS]) {
    const written = await send(url, dispatcher, '/admin/policies', policy);
    if (written.status !== 200) throw new Error(`a policy was refused: ${written.text.slice(0, 300)}`);
  }
  const question = { principal: { attributes: { team: 'any' } }, action: 'plan' };
  const onePlan = await send(url, dispatcher, '/plan', question);
  if (onePlan.status !== 200 || !onePlan.text.includes('"exact":false')) throw new Error(`the plan is not the coarsened one expected: ${onePlan.text.slice(0, 300)}`);
  const plansThatFit = Math.max(1, Math.floor(DEFAULT_CONFIG.maxAnswerSize / onePlan.text.length));
  const explained = { principal: { attributes: { team: 'x'.repeat(50) } }, resource: { attributes: { owner: 'y' } }, action: 'explain' };
  const oneExplanation = await send(url, dispatcher, '/check?explain=true', explained);
  if (oneExplanation.status !== 200) throw new Error(`the explanation was refused: ${oneExplanation.text.slice(0, 300)}`);
  const explanationsThatFit = Math.max(1, Math.floor(DEFAULT_CONFIG.maxAnswerSize / oneExplanation.text.length) - 1);
  return [
    { name: `/check/bulk of 1000`, path: '/check/bulk', body: Array.from({ length: 1000 }, () => CHECK), status: 200 },
    { name: `/plan, coarsened (${(onePlan.text.length / 1024).toFixed(0)} KiB)`, path: '/plan', body: question, status: 200 },
    { name: `/plan/bulk of ${plansThatFit}, as many as fit`, path: '/plan/bulk', body: Array.from({ length: plansThatFit }, () => question), status: 200 },
    { name: `/plan/bulk of ${plansThatFit + 1}, refused`, path: '/plan/bulk', body: Array.from({ length: plansThatFit + 1 }, () => question), status: 400 },
    { name: `/check/bulk?explain of ${explanationsThatFit}, as many as fit`, path: '/check/bulk?explain=true', body: Array.from({ length: explanationsThatFit }, () => explained), status: 200 },
    { name: `/check/bulk?explain of 1000, refused`, path: '/check/bulk?explain=true', body: Array.from({ length: 1000 }, () => explained), status: 400 },
    { name: 'validate, its whole work limit', path: '/admin/policies/validate', body: SHADOWING, status: 200 },
  ];
}

const percentile = (sorted: readonly number[], share: number) => sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))]!;
const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle) ? (sorted[middle - 1]! + sorted[middle]!) / 2 : sorted[Math.floor(middle)]!;
};

interface Latencies {
  median: number;
  p99: number;
  max: number;
  count: number;
}

/** /check one after another on its own connection for SECONDS while `alongside` runs; their latencies. */
async function probe(url: string, alongside: (stopped: () => boolean) => Promise<void>): Promise<Latencies> {
  const dispatcher = new Agent({ connections: 1 });
  const latencies: number[] = [];
  let stopped = false;
  const deadline = performance.now() + SECONDS * 1000;
  const load = alongside(() => stopped);
  try {
    while (performance.now() < deadline) {
      const answer = await send(url, dispatcher, '/check', CHECK);
      if (answer.status !== 200) throw new Error(`a check answered ${answer.status}`);
      latencies.push(answer.millis);
    }
  } finally {
    stopped = true;
    await load;
    await dispatcher.close();
  }
  latencies.sort((a, b) => a - b);
  return { median: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), max: latencies.at(-1)!, count: latencies.length };
}

/** Sends `heavy` again and again on one connection until stopped; its latencies. */
async function repeat(url: string, heavy: Heavy, stopped: () => boolean, into: number[]): Promise<void> {
  const dispatcher = new Agent({ connections: 1, bodyTimeout: 0, headersTimeout: 0 });
  try {
    while (!stopped()) {
      const answer = await send(url, dispatcher, heavy.path, heavy.body);
      if (answer.status !== heavy.status) throw new Error(`${heavy.name} answered ${answer.status}, not ${heavy.status}: ${answer.text.slice(0, 300)}`);
      into.push(answer.millis);
    }
  } finally {
    await dispatcher.close();
  }
}

interface Row {
  name: string;
  heavyMillis: number;
  checks: Latencies;
  idle: Latencies;
}

async function run(): Promise<Row[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'verdict-bench-heavy-'));
  const server = await startVerdict(dataDir, ['--store', 'embedded']);
  const setup = new Agent({ connections: 1, bodyTimeout: 0, headersTimeout: 0 });
  try {
    const heavies = await heavyRequests(server.url, setup);
    // Warm up every route once, so that no schema is compiled inside a measurement.
    for (const heavy of heavies) await send(server.url, setup, heavy.path, heavy.body);
    const rows: Row[] = [];
    for (const heavy of heavies) {
      const idle = await probe(server.url, async () => {});
      const heavyMillis: number[] = [];
      const checks = await probe(server.url, (stopped) => repeat(server.url, heavy, stopped, heavyMillis));
      rows.push({ name: heavy.name, heavyMillis: median(heavyMillis), checks, idle });
    }
    return rows;
  } finally {
    await setup.close();
    await stop(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const runs: Row[][] = [];
for (let index = 0; index < RUNS; index++) runs.push(await run());
const ms = (value: number) => `${value.toFixed(1)} ms`;
const ratio = (value: number) => `${value.toFixed(1)}x`;
console.log(`Checks sent one after another while a heavy request runs again and again, medians of ${RUNS} runs of ${SECONDS} s (load average ${loadavg()[0]!.toFixed(1)}):`);
console.log('heavy request | its latency | /check median (idle) | ratio | /check p99 (idle) | ratio | /check max (idle)');
runs[0]!.forEach((row, index) => {
  const of = (pick: (row: Row) => number) => median(runs.map((rows) => pick(rows[index]!)));
  console.log(
    [
      row.name,
      ms(of((r) => r.heavyMillis)),
      `${ms(of((r) => r.checks.median))} (${ms(of((r) => r.idle.median))})`,
      ratio(of((r) => r.checks.median / r.idle.median)),
      `${ms(of((r) => r.checks.p99))} (${ms(of((r) => r.idle.p99))})`,
      ratio(of((r) => r.checks.p99 / r.idle.p99)),
      `${ms(of((r) => r.checks.max))} (${ms(of((r) => r.idle.max))})`,
    ].join(' | '),
  );
});
