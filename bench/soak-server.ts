/**
 * `verdict start` for the soak harness, with one addition: it answers a `memory` message from its
 * parent (over the IPC channel) with process.memoryUsage() after a full garbage collection (run
 * with --expose-gc), so that start and end compare live memory, not garbage not yet collected.
 */
process.on('message', (message) => {
  if (message !== 'memory') return;
  (globalThis as { gc?: () => void }).gc?.();
  process.send!(process.memoryUsage());
});
await import('../src/cli.js');
