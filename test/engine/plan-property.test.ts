import t from 'tap';
import fc from 'fast-check';
import { Query } from 'mingo';
import { compile, evaluate } from '../../src/engine/index.js';
import { plan } from '../../src/engine/plan.js';
import { mongoFilter } from '../../src/engine/mongodb-filter.js';
import type { ConditionTree } from '../../src/engine/condition-tree.js';
import { CANONICAL_OPERATOR } from '../../src/engine/operators/index.js';
import type { Policy } from '../../src/schemas/policy.js';
import { reference } from './reference.js';
import { noExactFilterAsDocumented, planCase, resourceEntity, storedDocument, treeHolds, unstatableAsDocumented, type PlanCase } from '../helpers/plan-cases.js';
import { flatConditions, groupParts, isGroup, isSetReference } from '../../src/engine/condition-items.js';

/**
 * The plan is exact: for random policy sets, principals, actions, known attributes and collections
 * of resources, the plan's MongoDB filter run by mingo (MongoDB's query language in JavaScript)
 * selects exactly the resources `evaluate` allows, and the condition tree read directly agrees.
 * PLAN_RUNS sets the number of cases (each with up to 25 resources); PLAN_SEED replays a failure.
 */

const RUNS = Number(process.env.PLAN_RUNS ?? 2000);
const SEED = process.env.PLAN_SEED === undefined ? undefined : Number(process.env.PLAN_SEED);

/** The operators of `tree`'s comparisons into `into`, and those of its relations into `relations`. */
function operatorsIn(tree: ConditionTree, into: Set<string>, relations: Set<string>): void {
  if (typeof tree === 'boolean') return;
  if ('and' in tree) tree.and.forEach((child) => operatorsIn(child, into, relations));
  else if ('or' in tree) tree.or.forEach((child) => operatorsIn(child, into, relations));
  else if ('not' in tree) operatorsIn(tree.not, into, relations);
  else (tree.value_from === undefined ? into : relations).add(tree.operator);
}

/** The operators that read a relation by JSON equality: MongoDB's $eq alone would compare documents by field order. */
const BY_EQUALITY = ['==', '!=', 'in', 'not_in', 'contains', 'not_contains'];

/** Whether some principal, action or context condition names the resource. */
const readsResourceElsewhere = (policies: readonly Policy[]) =>
  policies.some((policy) => policy.rules.some((rule) => flatConditions([...rule.principal_conditions, ...(rule.action_conditions ?? []), ...(rule.context_conditions ?? [])]).some((condition) => condition.value_from?.startsWith('resource.'))));

/** Each kind of group the rules for the case's action hold, and on which side. */
const groupKindsFor = (example: PlanCase) =>
  example.policies.flatMap((policy) =>
    policy.rules
      .filter((rule) => rule.actions.includes(example.action))
      .flatMap((rule) =>
        (['principal', 'resource'] as const).flatMap((side) => rule[`${side}_conditions`].flatMap((item) => (isGroup(item) ? [`${groupParts(item).kind} ${side}`] : []))),
      ),
  );

t.test(`plans select exactly what the engine allows (${RUNS} cases)`, async (t) => {
  const seen = { conditional: 0, expr: 0, queryOnly: 0, noExactFilter: 0, operators: new Set<string>(), relationOperators: new Set<string>(), allowed: 0, denied: 0, relations: 0, unstatable: 0, readsResourceElsewhere: 0, groups: new Set<string>(), scopedFallback: 0, sets: 0 };
  const check = (example: PlanCase) => {
    const snapshot = compile(example.policies, 1);
    const principal = { uri: example.principal.uri, attributes: new Map(Object.entries(example.principal.attributes)) };
    const known = { uri: undefined, attributes: new Map(Object.entries(example.known)) };
    const asked = { action: example.action, actionAttributes: new Map(Object.entries(example.actionAttributes)), context: new Map(Object.entries(example.context)), time: example.time };
    let result;
    try {
      result = plan(snapshot, { principal, resource: known, ...asked });
    } catch (error) {
      if (!unstatableAsDocumented(error, known.attributes.size)) throw error;
      seen.unstatable++;
      return;
    }
    const filter = mongoFilter(result.condition, example.layout);
    const relates = JSON.stringify(result.condition).includes('"value_from"');
    if (result.kind === 'conditional' && readsResourceElsewhere(example.policies)) seen.readsResourceElsewhere++;
    if (relates) seen.relations++;
    if (result.kind === 'conditional') for (const kind of groupKindsFor(example)) seen.groups.add(kind);
    if (result.kind === 'conditional' && example.policies.some((policy) => policy.condition_sets !== undefined && policy.rules.some((rule) => rule.actions.includes(example.action) && rule.resource_conditions.some(isSetReference)))) seen.sets++;
    if (example.policies.some((policy) => policy.resource_types !== undefined) && JSON.stringify(result.condition).includes('"uri","operator":"startswith","value":"doc:"')) seen.scopedFallback++;
    if (!('filter' in filter) && !noExactFilterAsDocumented(filter.unsupported)) throw new Error(`no filter: ${filter.unsupported}`);
    if (result.kind === 'conditional') {
      seen.conditional++;
      operatorsIn(result.condition, seen.operators, seen.relationOperators);
      if (!('filter' in filter)) seen.noExactFilter++;
      else if (JSON.stringify(filter.filter).includes('"$expr"')) seen.expr++;
      else seen.queryOnly++;
    }
    const query = 'filter' in filter ? new Query(filter.filter, {}) : undefined;
    for (const document of example.resources) {
      const checked = { principal, resource: resourceEntity(document, example.known), ...asked };
      const allowed = evaluate(snapshot, checked).allowed;
      if (reference(example.policies, checked).decision.allowed !== allowed) throw new Error(`the engine and the reference reading disagree on ${JSON.stringify(document)}`);
      allowed ? seen.allowed++ : seen.denied++;
      const stored = storedDocument(document, example.layout);
      if (query !== undefined && query.test(stored) !== allowed) {
        throw new Error(`the filter ${JSON.stringify((filter as { filter: unknown }).filter)} ${allowed ? 'misses' : 'selects'} ${JSON.stringify(stored)}`);
      }
      if (treeHolds(result.condition, resourceEntity(document)) !== allowed) {
        throw new Error(`the condition ${JSON.stringify(result.condition)} is wrong for ${JSON.stringify(document)}`);
      }
    }
  };
  fc.assert(fc.property(planCase, check), { numRuns: RUNS, seed: SEED });

  t.comment(`${seen.conditional} conditional plans (${seen.expr} using $expr, ${seen.queryOnly} query operators only); ${seen.allowed} resources allowed, ${seen.denied} denied`);
  // The property only proves something if the cases reach every kind of condition.
  // Random cases make 440-490 conditional plans in 2,000; the bounds ask that each kind is exercised, with room for the draw.
  t.ok(seen.conditional >= RUNS / 8, 'at least an eighth of the plans are conditional');
  t.ok(seen.expr > 0 && seen.queryOnly > 0, 'both query operators and $expr are exercised');
  t.ok(seen.noExactFilter > 0, 'plans whose filter is refused for an operator MongoDB cannot state, their condition still checked');
  t.same([...seen.operators].sort(), [...new Set(Object.values(CANONICAL_OPERATOR))].sort(), 'every operator appears in some plan');
  t.ok(seen.allowed > 0 && seen.denied > 0, 'resources both allowed and denied');
  t.ok(seen.readsResourceElsewhere > RUNS / 50, 'conditional plans of policies whose principal, action or context conditions name the resource');
  t.ok(seen.relations > RUNS / 200, 'relations between two values of the resource');
  t.ok(seen.sets > RUNS / 100, `${seen.sets} conditional plans of rules that refer to a condition set on the resource`);
  t.ok(seen.scopedFallback > RUNS / 100, `${seen.scopedFallback} plans of policies scoped to resource types, stating the type`);
  t.same([...seen.groups].sort(), ['any_of principal', 'any_of resource', 'none_of principal', 'none_of resource'], 'conditional plans of rules with each kind of group, on the principal and on the resource');
  t.same(BY_EQUALITY.filter((operator) => !seen.relationOperators.has(operator)), [], 'relations by each operator built on equality');
});
