import { Agent, request } from 'undici';

/** A one-rule policy of its own name, like the keyed policies the server already holds. */
const policy = (name: string) => ({
  name,
  description: null,
  default_effect: 'deny',
  rules: [
    {
      name,
      effect: 'allow',
      principal_conditions: [{ path: 'attributes.role', operator: '==', value: 'writer' }],
      resource_conditions: [{ path: 'attributes.id', operator: '==', value: name }],
      actions: ['write'],
    },
  ],
});

/**
 * Policy creations per second: `count` policies named `<prefix>-<i>`, one after another on one
 * connection, each acknowledged (durable, and in the snapshot that checks use) before the next.
 */
export async function policyWritesPerSecond(url: string, count: number, prefix: string): Promise<number> {
  const dispatcher = new Agent({ connections: 1 });
  try {
    const started = performance.now();
    for (let index = 0; index < count; index++) {
      const response = await request(`${url}/admin/policies`, {
        method: 'POST',
        dispatcher,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(policy(`${prefix}-${index}`)),
      });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`a policy write answered ${response.statusCode}: ${text.slice(0, 200)}`);
    }
    return (count / (performance.now() - started)) * 1000;
  } finally {
    await dispatcher.close();
  }
}
