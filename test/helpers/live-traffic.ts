import type { TestServer } from './server.js';

/** Two policies and three checks whose decisions the live view tests count: one by each rule, one by the default effect. */
export const LIVE_POLICIES = [
  {
    name: 'desk',
    rules: [
      { name: 'admins', effect: 'allow', principal_conditions: [{ path: 'attributes.department', operator: '==', value: 'it' }], actions: ['administer'] },
    ],
  },
  {
    name: 'guard',
    rules: [
      { name: 'no-interns', effect: 'deny', principal_conditions: [{ path: 'attributes.intern', operator: '==', value: true }], actions: ['administer'] },
    ],
  },
];

const check = (principal: Record<string, unknown>) => ({ principal, resource: { uri: 'laptop:7', attributes: { kind: 'laptop' } }, action: 'administer' });
/** Allowed by desk's rule `admins`. */
export const ALLOWED = check({ attributes: { department: 'it' } });
/** Denied by guard's rule `no-interns`. */
export const BY_GUARD = check({ uri: 'user:ivy', attributes: { department: 'it', intern: true } });
/** Denied by the default effect. */
export const BY_DEFAULT = check({ attributes: { department: 'hr' } });

export async function createLivePolicies(server: TestServer): Promise<void> {
  for (const policy of LIVE_POLICIES) {
    const created = await server.call('POST', '/admin/policies', policy);
    if (created.status !== 200) throw new Error(`policy ${policy.name}: ${created.status} ${JSON.stringify(created.body)}`);
  }
}
