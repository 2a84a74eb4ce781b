/**
 * The live view's model: GET /admin/live's answers merged across polls, summed over the window,
 * and turned into chart series and axes. Pure: no DOM, tested on its own.
 */

import type { LiveAnswer, LiveSecond, RecentDenial, SentSide } from '../../src/schemas/live.js';

export type { LiveAnswer, LiveSecond, RecentDenial, SentSide };

/** The seconds held and the newer ones just read, oldest first, none older than the window. */
export function mergeSeconds(held: readonly LiveSecond[], newer: readonly LiveSecond[], now: number, windowSeconds: number): LiveSecond[] {
  const last = held.at(-1)?.at ?? -Infinity;
  const oldest = now - windowSeconds * 1000;
  return [...held, ...newer.filter((second) => second.at > last)].filter((second) => second.at > oldest);
}

export interface WindowSummary {
  allowed: number;
  denied: number;
  checks: number;
  bulks: number;
  errors4xx: number;
  errors5xx: number;
  /** Decisions per second over the last `recentSeconds` seconds held; undefined when none are held. */
  recentRate: number | undefined;
}

export function summarize(seconds: readonly LiveSecond[], recentSeconds = 10): WindowSummary {
  const summary: WindowSummary = { allowed: 0, denied: 0, checks: 0, bulks: 0, errors4xx: 0, errors5xx: 0, recentRate: undefined };
  for (const second of seconds) {
    summary.allowed += second.allowed;
    summary.denied += second.denied;
    summary.checks += second.check.count;
    summary.bulks += second.bulk.count;
    summary.errors4xx += second.errors_4xx;
    summary.errors5xx += second.errors_5xx;
  }
  const recent = seconds.slice(-recentSeconds);
  const elapsed = recent.reduce((total, second) => total + second.seconds, 0);
  if (elapsed > 0) summary.recentRate = recent.reduce((total, second) => total + second.allowed + second.denied, 0) / elapsed;
  return summary;
}

/** One line of a chart: a value per second held, null where nothing was measured (a gap). */
export interface Series {
  label: string;
  /** Names the line's colour (a CSS class). */
  tone: string;
  values: (number | null)[];
}

export interface ChartData {
  times: number[];
  series: Series[];
}

type Pick = (second: LiveSecond) => number | null;

function chart(seconds: readonly LiveSecond[], lines: { label: string; tone: string; pick: Pick }[]): ChartData {
  return { times: seconds.map((second) => second.at), series: lines.map(({ label, tone, pick }) => ({ label, tone, values: seconds.map(pick) })) };
}

const perSecond = (count: (second: LiveSecond) => number): Pick => (second) => count(second) / second.seconds;

export const liveCharts = {
  decisions: (seconds: readonly LiveSecond[]) =>
    chart(seconds, [
      { label: 'allowed', tone: 'allowed', pick: perSecond((s) => s.allowed) },
      { label: 'denied', tone: 'denied', pick: perSecond((s) => s.denied) },
    ]),
  requests: (seconds: readonly LiveSecond[]) =>
    chart(seconds, [
      { label: 'checks', tone: 'first', pick: perSecond((s) => s.check.count) },
      { label: 'bulks', tone: 'second', pick: perSecond((s) => s.bulk.count) },
    ]),
  errors: (seconds: readonly LiveSecond[]) =>
    chart(seconds, [
      { label: '4xx', tone: 'warning', pick: perSecond((s) => s.errors_4xx) },
      { label: '5xx', tone: 'denied', pick: perSecond((s) => s.errors_5xx) },
    ]),
  latency: (seconds: readonly LiveSecond[], kind: 'check' | 'bulk') =>
    chart(seconds, [
      { label: 'p50', tone: 'first', pick: (s) => s[kind].p50_ms },
      { label: 'p99', tone: 'second', pick: (s) => s[kind].p99_ms },
    ]),
  poolUtilization: (seconds: readonly LiveSecond[]) =>
    chart(seconds, [{ label: 'busy', tone: 'first', pick: (s) => (s.pool === null ? null : s.pool.utilization * 100) }]),
  poolQueue: (seconds: readonly LiveSecond[]) => chart(seconds, [{ label: 'waiting', tone: 'second', pick: (s) => s.pool?.queue ?? null }]),
  feedLag: (seconds: readonly LiveSecond[]) => chart(seconds, [{ label: 'longest lag', tone: 'first', pick: (s) => s.feed.lag_max_ms }]),
};

/** Whether any line has a value: a chart with none says so instead of drawing an empty frame. */
export const hasValues = (data: ChartData) => data.series.some((line) => line.values.some((value) => value !== null));

/** A y axis from 0 to a round maximum at or above `max`, with its ticks (1, 2, 2.5 or 5 times a power of ten apart). */
export function niceScale(max: number, tickCount = 4): { max: number; ticks: number[] } {
  if (!(max > 0)) return { max: 1, ticks: [0, 0.25, 0.5, 0.75, 1] };
  const rough = max / tickCount;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((factor) => factor * power).find((candidate) => candidate >= rough)!;
  const top = Math.ceil(max / step - 1e-9) * step;
  const ticks: number[] = [];
  for (let index = 0; index * step <= top + step / 1e6; index++) ticks.push(Number((index * step).toPrecision(12)));
  return { max: top, ticks };
}

const TIME_STEPS_SECONDS = [5, 10, 15, 30, 60, 120, 300, 600, 900];

/** Times for an x axis from `start` to `end` (epoch ms): about `count` of them, on round seconds or minutes. */
export function timeTicks(start: number, end: number, count = 4): number[] {
  const span = (end - start) / 1000;
  const step = (TIME_STEPS_SECONDS.find((candidate) => span / candidate <= count) ?? 900) * 1000;
  const ticks: number[] = [];
  for (let tick = Math.ceil(start / step) * step; tick <= end; tick += step) ticks.push(tick);
  return ticks;
}

const twoDigits = (value: number) => String(value).padStart(2, '0');

/** Local wall-clock time, HH:MM or HH:MM:SS. */
export function clock(epochMs: number, withSeconds = false): string {
  const time = new Date(epochMs);
  const minutes = `${twoDigits(time.getHours())}:${twoDigits(time.getMinutes())}`;
  return withSeconds ? `${minutes}:${twoDigits(time.getSeconds())}` : minutes;
}

/** A figure with as many decimals as its size deserves (3 significant digits, none past the unit for big ones). */
export function figure(value: number): string {
  if (value === 0) return '0';
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en');
  return Number(value.toPrecision(3)).toString();
}
