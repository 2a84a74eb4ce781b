export { VerdictClient, type ClientOptions, type CheckOptions } from './client.js';
export { VerdictError } from './errors.js';
export { fastifyGuard, expressGuard, type CheckMapping, type GuardOptions } from './middleware.js';
export type * from './wire.js';
