export { VerdictClient, type ClientOptions, type CheckOptions } from './client.js';
export type { OpenTelemetryApi } from './tracing.js';
export type { CallBounds } from './call-bounds.js';
export {
  VerdictAdminKeyError,
  VerdictCredentialError,
  VerdictError,
  VerdictRequestError,
  VerdictTimeoutError,
  VerdictUnavailableError,
  type RequestIssue,
} from './errors.js';
export { fastifyGuard, expressGuard, type CheckMapping, type GuardOptions } from './middleware.js';
export type * from './wire.js';
