/** The attribute schema document in force: its version, where it comes from, and the document itself (read only). */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call } from '../api.js';
import { Alerts } from '../components.js';
import type { SchemasAnswerBody as SchemasAnswer } from '../../../src/schemas/attribute-schemas.js';

/** What the screen shows: the document, none (404, with the server's reason), or the load failing. */
type Loaded = { state: 'loading' } | { state: 'found'; schemas: SchemasAnswer } | { state: 'none'; reason: string } | { state: 'failed'; message: string };

export function Schemas() {
  const [loaded, setLoaded] = useState<Loaded>({ state: 'loading' });
  useEffect(() => {
    call<SchemasAnswer>('GET', '/admin/schemas').then(
      (schemas) => setLoaded({ state: 'found', schemas }),
      (error: Error) => setLoaded(error instanceof ApiError && error.status === 404 ? { state: 'none', reason: error.message } : { state: 'failed', message: error.message }),
    );
  }, []);

  return (
    <section>
      <h1 tabIndex={-1}>Attribute schemas</h1>
      {loaded.state === 'loading' && <p role="status">Loading…</p>}
      {loaded.state === 'failed' && <Alerts messages={[loaded.message]} />}
      {loaded.state === 'none' && <p>{loaded.reason}.</p>}
      {loaded.state === 'found' && (
        <>
          <p>
            {loaded.schemas.file === null ? `Version ${loaded.schemas.version}, managed through the admin API (PUT /admin/schemas).` : `From the file ${loaded.schemas.file}.`}
          </p>
          <pre class="mono" aria-label="The schema document">
            {JSON.stringify(loaded.schemas.document, null, 2)}
          </pre>
        </>
      )}
    </section>
  );
}
