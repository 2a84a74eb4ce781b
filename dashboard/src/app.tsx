/** The shell: asks for the admin key when the server wants one, then the navigation and the current screen. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { adminKey, ApiError, call, whenUnauthorized } from './api.js';
import { links, parseRoute, type Route } from './routes.js';
import { KeyPrompt } from './views/key-prompt.js';
import { PolicyList } from './views/policy-list.js';
import { PolicyEditor } from './views/policy-editor.js';
import { SimplePolicy } from './views/simple-policy.js';
import { Registry } from './views/registry.js';
import { EntityEditor } from './views/entity-editor.js';
import { Playground } from './views/playground.js';
import { Live } from './views/live.js';
import { Audit } from './views/audit.js';
import { PolicyHistory } from './views/policy-history.js';
import { Schemas } from './views/schemas.js';
import { Shadow } from './views/shadow.js';
import { Access as AccessContext, type Whoami } from './access.js';

type Access = { state: 'checking' } | { state: 'granted'; whoami: Whoami } | { state: 'needs-key'; refused: boolean } | { state: 'unreachable'; message: string };

const NAVIGATION = [
  { link: links.policies, label: 'Policies', screens: ['policies', 'new-policy', 'simple-policy', 'policy', 'policy-history'] },
  { link: links.registry, label: 'Registry', screens: ['registry', 'new-entity', 'entity'] },
  { link: links.playground, label: 'Playground', screens: ['playground'] },
  { link: links.live, label: 'Live', screens: ['live'] },
  { link: links.audit, label: 'Audit', screens: ['audit'] },
  { link: links.schemas, label: 'Schemas', screens: ['schemas'] },
  { link: links.shadow, label: 'Shadow', screens: ['shadow'] },
];

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const follow = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', follow);
    follow(); // the fragment may have changed between the first render and this effect
    return () => removeEventListener('hashchange', follow);
  }, []);
  return route;
}

/** Which key is in use (or none) and what it may do; a 401 asks for a key. */
async function probeAccess(): Promise<Access> {
  try {
    return { state: 'granted', whoami: await call<Whoami>('GET', '/admin/whoami') };
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return { state: 'needs-key', refused: adminKey.get() !== null };
    return { state: 'unreachable', message: `Verdict did not answer: ${(error as Error).message}` };
  }
}

function Screen({ route }: { route: Route }) {
  switch (route.screen) {
    case 'policies':
      return <PolicyList />;
    case 'new-policy':
      return <PolicyEditor />;
    case 'policy':
      return <PolicyEditor key={route.name} name={route.name} />;
    case 'simple-policy':
      return <SimplePolicy />;
    case 'registry':
      return <Registry />;
    case 'new-entity':
      return <EntityEditor />;
    case 'entity':
      return <EntityEditor key={route.uri} uri={route.uri} />;
    case 'playground':
      return <Playground />;
    case 'live':
      return <Live />;
    case 'shadow':
      return <Shadow />;
    case 'audit':
      return <Audit />;
    case 'policy-history':
      return <PolicyHistory key={route.name} name={route.name} />;
    case 'schemas':
      return <Schemas />;
  }
}

export function App() {
  const route = useRoute();
  const [access, setAccess] = useState<Access>({ state: 'checking' });

  useEffect(() => {
    whenUnauthorized(() => setAccess({ state: 'needs-key', refused: adminKey.get() !== null }));
    void probeAccess().then(setAccess);
  }, []);

  // A new screen starts at its heading, for keyboard and screen reader users; the first one starts at the top.
  const arrived = useRef(false);
  useEffect(() => {
    if (access.state === 'checking') return;
    if (arrived.current) document.querySelector<HTMLElement>('main h1')?.focus();
    arrived.current = true;
  }, [route, access.state]);

  const submitKey = async (key: string) => {
    adminKey.set(key);
    const result = await probeAccess();
    if (result.state !== 'granted') adminKey.forget();
    setAccess(result);
  };

  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Verdict</span>
        {access.state === 'granted' && (
          <nav aria-label="Sections">
            {NAVIGATION.map((item) => (
              <a key={item.link} href={item.link} aria-current={item.screens.includes(route.screen) ? 'page' : undefined}>
                {item.label}
              </a>
            ))}
          </nav>
        )}
        {access.state === 'granted' && adminKey.get() !== null && (
          <button
            type="button"
            class="quiet"
            onClick={() => {
              adminKey.forget();
              setAccess({ state: 'needs-key', refused: false });
            }}
          >
            Forget key
          </button>
        )}
      </header>
      <main id="main">
        {access.state === 'checking' && <p role="status">Connecting to Verdict…</p>}
        {access.state === 'unreachable' && (
          <div class="alert" role="alert">
            {access.message}
          </div>
        )}
        {access.state === 'needs-key' && <KeyPrompt refused={access.refused} onSubmit={submitKey} />}
        {access.state === 'granted' && (
          <AccessContext.Provider value={access.whoami}>
            <Screen route={route} />
          </AccessContext.Provider>
        )}
      </main>
    </>
  );
}
