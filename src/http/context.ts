import type { Config } from '../config.js';
import type { CheckService } from '../checks.js';
import type { PolicyService } from '../policies.js';
import type { RegistryService } from '../registry/registry-service.js';

/** What the route plugins work with; built once by buildApp. */
export interface AppContext {
  config: Config;
  checks: CheckService;
  policies: PolicyService;
  registry: RegistryService;
}

export interface RoutesOptions {
  context: AppContext;
}
