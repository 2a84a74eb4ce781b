import type { onRequestHookHandler } from 'fastify';
import type { PolicySnapshots } from '../snapshot/policy-snapshots.js';
import { ClientError, UnavailableError } from '../errors.js';

import { MIN_REVISION_HEADER } from '../schemas/wire.js';

/** How the header reads in the API documentation of every check route. */
export const MIN_REVISION_DOC =
  `Header \`${MIN_REVISION_HEADER}: N\` (optional): decide only once this process serves policy revision N or later ` +
  '(the `verdict-revision` of the answer to a write, from any process on the same store); 503 if it does not arrive in time.';

/**
 * Read-your-writes across processes: a check sent with `verdict-min-revision: N` (the
 * `verdict-revision` of an answer to a write, from any process on the same store) is decided only
 * once this process's snapshot has reached N. It waits on the change feed, at most `waitMs`; then
 * 503. Checks without the header pass straight through.
 */
export function minRevisionCheck(snapshots: PolicySnapshots, waitMs: number): onRequestHookHandler {
  return (request, _reply, done) => {
    const header = request.headers[MIN_REVISION_HEADER];
    if (header === undefined) return done();
    const text = Array.isArray(header) ? header.join(',') : header;
    if (!/^\d{1,15}$/.test(text.trim())) {
      return done(new ClientError(400, `${MIN_REVISION_HEADER} must be a revision number (from a verdict-revision header), got '${text}'`));
    }
    const wanted = Number(text);
    snapshots.reached(wanted, waitMs).then((reached) => {
      if (reached) return done();
      done(
        new UnavailableError(
          `This process serves policy revision ${snapshots.current.revision}; revision ${wanted} did not reach it within ${waitMs} ms. ` +
            'Retry, or send the check to the process that answered the write',
        ),
      );
    }, done);
  };
}
