/** Live figures, refreshed every few seconds: snapshot revision from /health, decisions and latency from /metrics. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { liveFigures, readMetrics, type LiveFigures, type Reading } from '../metrics.js';

const REFRESH_MILLISECONDS = 3000;

interface LiveState {
  revision?: number;
  healthProblem?: string;
  figures?: LiveFigures;
  metricsProblem?: string;
  refreshedAt?: string;
}

async function fetchRevision(): Promise<number> {
  const response = await fetch('/health');
  if (!response.ok) throw new Error(`GET /health answered ${response.status}`);
  return ((await response.json()) as { revision: number }).revision;
}

async function fetchMetricsText(): Promise<string> {
  const response = await fetch('/metrics');
  if (!response.ok) throw new Error(`GET /metrics answered ${response.status}`);
  return response.text();
}

const milliseconds = (value: number | undefined) => (value === undefined ? '–' : `${value < 10 ? value.toFixed(2) : value.toFixed(0)} ms`);

function share(part: number | undefined, other: number | undefined): string {
  if (part === undefined || other === undefined) return '–';
  const total = part + other;
  return total === 0 ? `${part}` : `${part} (${Math.round((part / total) * 100)}%)`;
}

function Tile({ label, value }: { label: string; value: string }) {
  return (
    <div class="tile">
      <dt>{label}</dt>
      <dd>{value}</dd>
    </div>
  );
}

export function Live() {
  const [state, setState] = useState<LiveState>({});
  const previous = useRef<Reading | undefined>(undefined);

  useEffect(() => {
    let stopped = false;
    const refresh = async () => {
      const next: LiveState = {};
      try {
        next.revision = await fetchRevision();
      } catch (error) {
        next.healthProblem = (error as Error).message;
      }
      try {
        const reading = readMetrics(await fetchMetricsText(), performance.now());
        if (reading.allowed === undefined && reading.denied === undefined && reading.latency === undefined) {
          throw new Error('GET /metrics has no decision counters or latency histogram');
        }
        next.figures = liveFigures(previous.current, reading);
        previous.current = reading;
      } catch (error) {
        next.metricsProblem = (error as Error).message;
      }
      next.refreshedAt = new Date().toLocaleTimeString();
      if (!stopped) setState(next);
    };
    void refresh();
    const timer = setInterval(refresh, REFRESH_MILLISECONDS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, []);

  const figures = state.figures;
  return (
    <section>
      <h1 tabIndex={-1}>Live</h1>
      <p class="hint">
        Refreshed every {REFRESH_MILLISECONDS / 1000} seconds{state.refreshedAt === undefined ? '' : `; last at ${state.refreshedAt}`}. Counts are
        for the interval since the previous refresh.
      </p>
      <dl class="tiles">
        <Tile label="Snapshot revision" value={state.revision === undefined ? '–' : String(state.revision)} />
        {figures !== undefined && (
          <>
            <Tile label="Decisions per second" value={figures.decisionsPerSecond === undefined ? '–' : figures.decisionsPerSecond.toFixed(1)} />
            <Tile label="Allowed" value={share(figures.allowed, figures.denied)} />
            <Tile label="Denied" value={share(figures.denied, figures.allowed)} />
            <Tile label="Latency p50" value={milliseconds(figures.p50)} />
            <Tile label="Latency p90" value={milliseconds(figures.p90)} />
            <Tile label="Latency p99" value={milliseconds(figures.p99)} />
          </>
        )}
      </dl>
      {state.healthProblem !== undefined && <p class="alert">Health unavailable: {state.healthProblem}</p>}
      {state.metricsProblem !== undefined && (
        <p class="notice" role="status">
          Metrics unavailable ({state.metricsProblem}). Decision rates and latency appear here once the server exposes
          Prometheus metrics at /metrics.
        </p>
      )}
    </section>
  );
}
