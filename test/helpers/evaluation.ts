import { MeasuredPlacement } from '../../src/pool/measured-placement.js';
import { bulkPlacement, detectParallelism } from '../../src/pool/parallelism.js';

/**
 * What /ready's checks say of where bulks go, on this machine, for a server started with
 * `--evaluation auto` and `workers` threads that has decided no bulk yet: the rule, and, when it
 * measures the paths, that nothing is measured yet.
 */
export function autoEvaluationChecks(workers: number): Record<string, string> {
  const { description, measured } = bulkPlacement('auto', detectParallelism(), workers);
  return measured ? { evaluation: description, placement: new MeasuredPlacement({ workers }).describe() } : { evaluation: description };
}
