export type { Decision, DecisionRequest, ResolvedEntity } from './entity.js';
export { compile, type Snapshot } from './compile.js';
export { evaluate } from './evaluate.js';
export { plan, type Plan, type PlanKind } from './plan.js';
export type { Comparison, ConditionTree } from './condition-tree.js';
export { DEFAULT_MONGO_FILTER_OPTIONS, mongoFilter, mongoOptionIssue, SELECTS_NOTHING, type MongoFilter, type MongoFilterOptions } from './mongodb-filter.js';
export { normalizePolicy, policyIssues, type PolicyLimits } from './validate.js';
export { buildSimplePolicy, type SimplePolicySide } from './simple-policy.js';
export { slugify } from './slug.js';
