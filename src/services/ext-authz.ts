import type { Connection, ExtAuthzMapping, ForwardedRequest } from '../ext-authz/mapping.js';
import { extAuthzStatus } from '../decide/undecidable-answers.js';
import type { CheckInput } from '../requests/check-request.js';
import type { RequestOrigin } from '../decision-log/line.js';
import type { CheckService } from './checks.js';
import type { Decision } from '../engine/index.js';

const BEARER = /^Bearer +([A-Za-z0-9._~+/=-]+) *$/i;
/** What a client whose token was refused is told, unless the mapping gives it the reason. */
const TOKEN_REFUSED = 'The bearer token was not accepted';

/** What external authorization answers a forwarded request, whichever transport asked (HTTP or gRPC); `decision`, when the policies decided it. */
export type ExtAuthzOutcome =
  | { allowed: true; /** The uri the principal was resolved to, for the upstream principal header. */ principalUri: string | undefined; decision: Decision }
  | { allowed: false; status: 401 | 403; /** Why, for the log, and for the client when the mapping says so. */ reason: string; decision?: Decision };

const authorizationOf = (header: string | string[] | undefined) => (Array.isArray(header) ? header[0] : header);

/**
 * Envoy's external authorization, transport aside: the mapping makes a check of a forwarded request
 * (the principal from the bearer token's verified claims and the headers it names, the resource and
 * action from the route, the context from headers), decided as any check. A request no route maps,
 * or one whose check cannot be decided, is denied; never an allow by accident.
 */
export class ExtAuthzService {
  constructor(
    readonly mapping: ExtAuthzMapping,
    /** Whether bearer tokens are verified (`--tokens`): otherwise the Authorization header is the app's, and not read. */
    private readonly readsTokens: boolean,
    private readonly checks: CheckService,
  ) {}

  /** The body a denied client gets, whichever door: why only when the mapping says so (a refused token's reason names key sets and issuers). */
  deniedBody(outcome: ExtAuthzOutcome & { allowed: false }): string {
    if (this.mapping.denyReasonToClient) return outcome.reason;
    return outcome.status === 401 ? TOKEN_REFUSED : 'Forbidden';
  }

  async authorize(forwarded: ForwardedRequest, origin: RequestOrigin): Promise<ExtAuthzOutcome> {
    const { mapping } = this;
    const mapped = mapping.map(forwarded);
    if (mapped.kind === 'unmapped') return { allowed: false, status: 403, reason: mapped.why };
    const token = this.readsTokens ? BEARER.exec(authorizationOf(forwarded.headers.authorization) ?? '')?.[1] : undefined;
    // The check this request is, as the mapping reads it: the principal's credential and its key set hint go to the identity port with the rest.
    const input: CheckInput = {
      principal: {
        uri: undefined,
        attributes: mapping.principalAttributes(forwarded.headers),
        ...(token !== undefined && { credential: { token, from: 'authorization-header', ...(mapped.keySet !== undefined && { keySet: mapped.keySet }) } }),
        uriOf: mapping.principalUriOf,
      },
      resource: mapped.resource,
      action: mapped.action,
      context: mapped.context,
    };
    return this.decided(input, origin);
  }

  /** A connection Envoy's network filter asks about: the mapping's network section makes its check (principal and resource by uri, their registered attributes read as any check's). */
  authorizeConnection(connection: Connection, origin: RequestOrigin): Promise<ExtAuthzOutcome> {
    const mapped = this.mapping.mapConnection(connection);
    if (mapped.kind === 'unmapped') return Promise.resolve({ allowed: false, status: 403, reason: mapped.why });
    const input: CheckInput = {
      principal: { uri: mapped.principalUri, attributes: new Map() },
      resource: { uri: mapped.resourceUri, attributes: new Map() },
      action: mapped.action,
      context: mapped.context,
    };
    return this.decided(input, origin);
  }

  private async decided(input: CheckInput, origin: RequestOrigin): Promise<ExtAuthzOutcome> {
    try {
      const { decision, principalUri } = await this.checks.decideNamingPrincipal(input, origin);
      return decision.allowed ? { allowed: true, principalUri, decision } : { allowed: false, status: 403, reason: decision.reason, decision };
    } catch (error) {
      return { allowed: false, status: extAuthzStatus(error), reason: (error as Error).message };
    }
  }
}
