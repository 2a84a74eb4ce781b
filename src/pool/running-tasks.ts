/**
 * Which task each worker thread is running, in memory shared between the front and the workers, so
 * that the front can tell a worker stuck in one task (and terminate it) without a per-task abort
 * signal: Piscina gives a task with a signal a worker of its own, which would stop the front from
 * queueing the next bulk on a worker before the current one is done.
 *
 * Each slot is a pair (thread id, running task id); task id 0 means idle, thread id 0 a free slot.
 */
export class RunningTasks {
  private readonly slots: Int32Array;

  constructor(readonly buffer: SharedArrayBuffer) {
    this.slots = new Int32Array(buffer);
  }

  /** Room for `threads` workers and as many replacements starting while the old ones are torn down. */
  static create(threads: number): RunningTasks {
    return new RunningTasks(new SharedArrayBuffer(2 * threads * 2 * Int32Array.BYTES_PER_ELEMENT));
  }

  /** In a worker, once: takes a free slot for `threadId` and returns its index. */
  claim(threadId: number): number {
    for (let slot = 0; slot < this.slots.length; slot += 2) {
      if (Atomics.compareExchange(this.slots, slot, 0, threadId) === 0) return slot;
    }
    throw new Error(`No free slot among ${this.slots.length / 2} for worker thread ${threadId}`);
  }

  /** In a worker: `taskId` (never 0) is running in the slot, or nothing when `taskId` is 0. */
  mark(slot: number, taskId: number): void {
    Atomics.store(this.slots, slot + 1, taskId);
  }

  /** On the front: frees the slot of a worker that is gone. */
  release(threadId: number): void {
    for (let slot = 0; slot < this.slots.length; slot += 2) {
      if (Atomics.load(this.slots, slot) === threadId) {
        Atomics.store(this.slots, slot + 1, 0);
        Atomics.store(this.slots, slot, 0);
      }
    }
  }

  /** On the front: every (thread, task) pair running now. */
  *running(): Generator<{ threadId: number; taskId: number }> {
    for (let slot = 0; slot < this.slots.length; slot += 2) {
      const threadId = Atomics.load(this.slots, slot);
      const taskId = Atomics.load(this.slots, slot + 1);
      if (threadId !== 0 && taskId !== 0) yield { threadId, taskId };
    }
  }
}
