/** The entity registry: a page at a time with the total, and a lookup by exact uri. */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call, ENTITIES, entityPath } from '../api.js';
import { Alerts, TextField } from '../components.js';
import { attributesObject, pageLabel, PAGE_SIZE, type Entity } from '../registry-model.js';
import { go, links } from '../routes.js';
import { useCanWrite } from '../access.js';
import { Time } from '../time.js';

interface Page {
  offset: number;
  total: number;
  entities: Entity[];
}

function EntityTable({ entities }: { entities: Entity[] }) {
  return (
    <table>
      <thead>
        <tr>
          <th scope="col">URI</th>
          <th scope="col">Type</th>
          <th scope="col">Attributes</th>
          <th scope="col">Registered</th>
        </tr>
      </thead>
      <tbody>
        {entities.map((entity) => (
          <tr key={entity.uri}>
            <td>
              <a href={links.entity(entity.uri)}>{entity.uri}</a>
            </td>
            <td>{entity.type ?? ''}</td>
            <td class="mono">{JSON.stringify(attributesObject(entity))}</td>
            <td class="nowrap">
              <Time iso={entity.registered_at} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Registry() {
  const canWrite = useCanWrite();
  const [page, setPage] = useState<Page | undefined>(undefined);
  const [offset, setOffset] = useState(0);
  const [alerts, setAlerts] = useState<string[]>([]);
  const [search, setSearch] = useState('');
  const [notFound, setNotFound] = useState<string | undefined>(undefined);

  useEffect(() => {
    Promise.all([call<number>('GET', `${ENTITIES}/$count`), call<Entity[]>('GET', `${ENTITIES}?offset=${offset}&limit=${PAGE_SIZE}`)]).then(
      ([total, entities]) => setPage({ offset, total, entities }),
      (error: Error) =>
        setAlerts([error instanceof ApiError && error.status === 404 ? 'The entity registry is switched off on this server.' : error.message]),
    );
  }, [offset]);

  const find = async (event: Event) => {
    event.preventDefault();
    setNotFound(undefined);
    const uri = search.trim();
    if (uri === '') return;
    try {
      await call<Entity>('GET', entityPath(uri));
      go(links.entity(uri));
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) setNotFound(`No entity has the uri ${uri}.`);
      else setAlerts([(error as Error).message]);
    }
  };

  return (
    <section>
      <div class="heading-row">
        <h1 tabIndex={-1}>Registry</h1>
        {canWrite && (
          <a class="button primary" href={links.newEntity}>
            Register entity
          </a>
        )}
      </div>
      <Alerts messages={alerts} />
      <form class="search row" onSubmit={find} role="search">
        <TextField label="Find by uri" value={search} onValue={setSearch} error={notFound} hint="The exact uri, e.g. user:alice" />
        <button type="submit">Find</button>
      </form>
      {page === undefined ? (
        alerts.length === 0 && <p role="status">Loading…</p>
      ) : (
        <>
          <p>{pageLabel(page.offset, page.entities.length, page.total)} entities</p>
          {page.entities.length > 0 && <EntityTable entities={page.entities} />}
          <nav class="pager" aria-label="Pages">
            <button type="button" disabled={page.offset === 0} onClick={() => setOffset(Math.max(0, page.offset - PAGE_SIZE))}>
              Previous page
            </button>
            <button type="button" disabled={page.offset + PAGE_SIZE >= page.total} onClick={() => setOffset(page.offset + PAGE_SIZE)}>
              Next page
            </button>
          </nav>
        </>
      )}
    </section>
  );
}
