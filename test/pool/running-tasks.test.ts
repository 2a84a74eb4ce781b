import t from 'tap';

// The shared-memory bookkeeping alone; the pool's workers using it are tested in worker-faults.test.ts (a hung worker is found and replaced).
import { RunningTasks } from '../../src/pool/running-tasks.js';

t.test('each thread claims a slot of its own; the front sees what runs and frees the slots of threads gone', async (t) => {
  const tasks = RunningTasks.create(1);
  const first = tasks.claim(11);
  const second = tasks.claim(12);
  t.not(first, second);
  t.throws(() => tasks.claim(13), /No free slot among 2 for worker thread 13/, 'room for one thread and one replacement');
  t.same([...tasks.running()], [], 'claimed slots run nothing yet');
  tasks.mark(first, 7);
  tasks.mark(second, 8);
  t.same([...tasks.running()], [
    { threadId: 11, taskId: 7 },
    { threadId: 12, taskId: 8 },
  ]);
  tasks.mark(second, 0);
  tasks.release(11);
  t.same([...tasks.running()], [], 'idle and released slots are not running');
  t.equal(tasks.claim(13), first, 'a released slot is claimed again');
});
