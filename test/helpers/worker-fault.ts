/**
 * Worker threads made to fail as a real fault would, for test/pool/worker-faults.test.ts: a pool given
 * FAULTY_WORKER_FILE runs the real worker (workers/evaluate.ts) in threads that exit (crash) or spin
 * forever (hang) while reading a bulk holding FAULT_ACTION, as VERDICT_TEST_WORKER_FAULT says when the
 * thread starts. Nothing of it is in the worker the server ships.
 */
export const FAULT_ACTION = 'verdict-test-worker-fault';
export const FAULTY_WORKER_FILE = new URL('./faulty-worker.js', import.meta.url);
