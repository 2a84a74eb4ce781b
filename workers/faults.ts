/**
 * Test only (test/pool/worker-faults.test.ts): with VERDICT_TEST_WORKER_FAULT=crash or hang in the
 * environment, a bulk holding the action FAULT_ACTION makes a worker exit or spin forever, as a
 * real fault would.
 */
const FAULT = process.env.VERDICT_TEST_WORKER_FAULT;
export const FAULT_ACTION = 'verdict-test-worker-fault';

export function injectFaultIfAsked(bulkText: string): void {
  if (FAULT === undefined || !bulkText.includes(FAULT_ACTION)) return;
  if (FAULT === 'crash') process.exit(1);
  if (FAULT === 'hang') for (;;);
}
