// The mapping and policies the external authorization tests share, over HTTP and over gRPC: owners
// read their documents, anyone reads public ones, editors update, nobody reads from the denied range.

export const MESH_MAPPING = {
  principal: { uri: 'user:{sub}' },
  client_address: { trusted_hops: 0 },
  routes: [
    { path: '/documents/{id}', resource_type: 'document' },
    { path: '/teams/{team}/documents/{doc}', resource_uri: 'document:{team}/{doc}', methods: ['GET'], actions: { GET: 'read' } },
    { path: '/public/{id}', resource_type: 'public' },
  ],
  upstream_headers: { principal_uri: 'x-verdict-principal' },
};

export const MESH_POLICIES = [
  {
    name: 'owners',
    rules: [
      { name: 'office-only', effect: 'deny', context_conditions: [{ path: 'attributes.client_address', operator: 'in_cidr', value: '203.0.113.0/24' }], principal_conditions: [], resource_conditions: [], actions: ['read'] },
      { name: 'owner-reads', effect: 'allow', principal_conditions: [{ path: 'attributes.claims.sub', operator: '==', value_from: 'resource.attributes.owner' }], actions: ['read', 'update'] },
      { name: 'public-reads', effect: 'allow', principal_conditions: [], resource_conditions: [{ path: 'uri', operator: 'startswith', value: 'public:' }], actions: ['read'] },
      { name: 'editors-write', effect: 'allow', principal_conditions: [{ path: 'attributes.claims.groups', operator: 'contains', value: 'editors' }], actions: ['update'] },
    ],
  },
];
