import { MeasuredPlacement } from '../../src/pool/measured-placement.js';
import { bulkPlacement, detectParallelism } from '../../src/pool/parallelism.js';
import { workerSizing } from '../../src/pool/worker-sizing.js';

/**
 * What /ready's checks say of where bulks go and of the worker threads, on this machine, for a server
 * started with `--evaluation auto` and `--workers workers` that has decided no bulk yet: the rule,
 * and, when it measures the paths, that nothing is measured yet.
 */
export function autoEvaluationChecks(workers: number | 'auto'): Record<string, string> {
  const parallelism = detectParallelism();
  const sizing = workerSizing(workers, parallelism);
  const { description, measured } = bulkPlacement('auto', parallelism, sizing.threads);
  return {
    evaluation: description,
    worker_threads: sizing.description,
    ...(measured && { placement: new MeasuredPlacement({ workers: sizing.threads }).describe() }),
  };
}
