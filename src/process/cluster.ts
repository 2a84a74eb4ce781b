import cluster, { type Worker } from 'node:cluster';

/**
 * Runs `processes` copies of this command that share its listening port (Node's cluster module),
 * replaces one that dies, and stops them all on SIGTERM/SIGINT. The copies share the store and
 * keep each other current through its change feed.
 */
export function superviseProcesses(processes: number): void {
  let stopping = false;
  const fork = (): Worker => cluster.fork();
  for (let index = 0; index < processes; index++) fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    console.error(`verdict: process ${worker.process.pid} ended (${signal ?? code}); starting another`);
    fork();
  });
  const stop = (signal: NodeJS.Signals) => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

export const isSupervisor = (processes: number): boolean => processes > 1 && cluster.isPrimary;
