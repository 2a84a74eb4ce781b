/**
 * The files the worker threads run, for the modules on the front that start them: the bulk pool
 * (src/pool/bulk-pool.ts) runs evaluate.ts, the decision log (src/decision-log/decision-log.ts) runs
 * decision-log-writer.ts. Named here, beside the files themselves, so that a move of either is one edit.
 */
export const POOL_WORKER_FILE = new URL('./evaluate.js', import.meta.url);
export const DECISION_LOG_WRITER_FILE = new URL('./decision-log-writer.js', import.meta.url);
