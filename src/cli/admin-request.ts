import { API_KEY_HEADER } from '../schemas/wire.js';
import { adminApiKeyOf, ConfigError } from '../config/config.js';

/** Most redirects followed within the server's origin. */
const MAX_REDIRECTS = 5;

/**
 * An admin call to the server at `url`, with the admin key from ADMIN_API_KEY; resolves with the
 * status and the body's text. Redirects are followed within the server's origin only: the key is
 * never sent anywhere else, and a redirect to another origin stops the call, naming it, for the user
 * to pass as --url if that is the server.
 */
export async function adminRequest(url: string, env: NodeJS.ProcessEnv, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const key = adminApiKeyOf(env);
  const headers: Record<string, string> = { ...(key !== '' && { [API_KEY_HEADER]: key }), ...(body !== undefined && { 'content-type': 'application/json' }) };
  const method = body === undefined ? 'GET' : 'POST';
  let target = new URL(path, url);
  for (let redirects = 0; ; redirects++) {
    let response: Response;
    try {
      response = await fetch(target, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), redirect: 'manual' });
    } catch (error) {
      throw new ConfigError(`could not reach ${url}: ${((error as Error).cause as Error | undefined)?.message ?? (error as Error).message}`);
    }
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location !== null) {
      await response.body?.cancel();
      const next = new URL(location, target);
      if (next.origin !== target.origin) {
        throw new ConfigError(`${url} redirected to ${next.href}, another origin, which is never sent the admin key; if that is the server, use --url ${next.origin}`);
      }
      if (redirects === MAX_REDIRECTS) throw new ConfigError(`${url} redirected more than ${MAX_REDIRECTS} times`);
      target = next;
      continue;
    }
    return { status: response.status, text: await response.text() };
  }
}
