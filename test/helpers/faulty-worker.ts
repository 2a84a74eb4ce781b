/**
 * The pool's worker with a fault planted in its JSON parsing (see worker-fault.ts): the fault strikes
 * while the worker holds the bulk as its running task, where the pool's watchdog looks for a hung one.
 */
import runTask from '../../workers/evaluate.js';
import { FAULT_ACTION } from './worker-fault.js';

const fault = process.env.VERDICT_TEST_WORKER_FAULT;
const parse = JSON.parse;
JSON.parse = (text: string, reviver?: Parameters<typeof JSON.parse>[1]): unknown => {
  if (text.includes(FAULT_ACTION)) {
    if (fault === 'crash') process.exit(1);
    if (fault === 'hang') for (;;);
  }
  return parse(text, reviver);
};

export default runTask;
