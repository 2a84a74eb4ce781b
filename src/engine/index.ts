export type { Decision, DecisionRequest, ResolvedEntity } from './entity.js';
export { compile, type Snapshot } from './compile.js';
export { evaluate } from './evaluate.js';
export { normalizePolicy, policyIssues, type PolicyLimits } from './validate.js';
export { buildSimplePolicy, type SimplePolicySide } from './simple-policy.js';
export { slugify } from './slug.js';
