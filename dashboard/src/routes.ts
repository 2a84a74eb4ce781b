/** Screens addressed by the URL fragment, so that every screen has a link and the server serves one page. */
export type Route =
  | { screen: 'policies' }
  | { screen: 'new-policy' }
  | { screen: 'simple-policy' }
  | { screen: 'policy'; name: string }
  | { screen: 'policy-history'; name: string }
  | { screen: 'registry' }
  | { screen: 'new-entity' }
  | { screen: 'entity'; uri: string }
  | { screen: 'playground' }
  | { screen: 'live' }
  | { screen: 'audit' }
  | { screen: 'schemas' }
  | { screen: 'shadow' };

export function parseRoute(hash: string): Route {
  const [first = '', ...rest] = hash.replace(/^#\/?/, '').split('/');
  const argument = decodeURIComponent(rest.join('/'));
  switch (first) {
    case 'policies':
      return argument === 'new' ? { screen: 'new-policy' } : argument === 'simple' ? { screen: 'simple-policy' } : { screen: 'policies' };
    case 'policy':
      // Policy names are slugs (no '/'): `policy/<name>/history` is the policy's history.
      if (rest.length === 2 && rest[1] === 'history') return { screen: 'policy-history', name: decodeURIComponent(rest[0]!) };
      return argument === '' ? { screen: 'policies' } : { screen: 'policy', name: argument };
    case 'registry':
      return argument === 'new' ? { screen: 'new-entity' } : { screen: 'registry' };
    case 'entity':
      return argument === '' ? { screen: 'registry' } : { screen: 'entity', uri: argument };
    case 'playground':
      return { screen: 'playground' };
    case 'live':
      return { screen: 'live' };
    case 'audit':
      return { screen: 'audit' };
    case 'schemas':
      return { screen: 'schemas' };
    case 'shadow':
      return { screen: 'shadow' };
    default:
      return { screen: 'policies' };
  }
}

export const links = {
  policies: '#/policies',
  newPolicy: '#/policies/new',
  simplePolicy: '#/policies/simple',
  policy: (name: string) => `#/policy/${encodeURIComponent(name)}`,
  policyHistory: (name: string) => `#/policy/${encodeURIComponent(name)}/history`,
  registry: '#/registry',
  newEntity: '#/registry/new',
  entity: (uri: string) => `#/entity/${encodeURIComponent(uri)}`,
  playground: '#/playground',
  live: '#/live',
  audit: '#/audit',
  schemas: '#/schemas',
  shadow: '#/shadow',
};

export function go(link: string): void {
  location.hash = link;
}
