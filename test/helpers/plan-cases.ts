import fc from 'fast-check';
import { OPERATORS, type AlternativeItem, type Condition, type ConditionItem, type Operator, type Policy, type SetItem } from '../../src/schemas/policy.js';
import { flatConditions, ownSets } from '../../src/engine/condition-items.js';
import { OPERATOR_DEFINITIONS } from '../../src/engine/operators/index.js';
import { conditionHolds } from '../engine/reference.js';
import type { ConditionTree } from '../../src/engine/condition-tree.js';
import { PlanUnstatable } from '../../src/engine/plan.js';
import type { ResolvedEntity } from '../../src/engine/index.js';
import type { MongoFilterOptions } from '../../src/engine/mongodb-filter.js';

/**
 * Random policy sets, principals and resource collections for the plan's property tests: every
 * operator (synonyms too), allow and deny rules, both default effects, nested paths, list
 * positions, keys MongoDB reads specially (`0`, `$x`), missing and mistyped attributes, lists and
 * embedded documents as values (in both key orders).
 */

const SCALARS = [0, 1, 2, 1.5, -1, '', 'a', 'ab', 'ba', 'b', 'A', 'a\n', 'x.y', '$a', 'é', '😀', '10.1.2.3', '2001:db8::1', '2026-11-28T12:00:00Z', true, false, null];
/** The times plans and checks are decided at, and date-times around them and the spans `within` takes. */
const DECISION_TIMES = ['2026-11-28T12:00:00Z', '2026-11-28T12:30:00+01:00', '2026-11-29T11:59:59Z'];
const DATE_TIMES = [...DECISION_TIMES, '2026-11-27T12:00:00Z', '2026-11-28T11:30:00Z', '2026-11-28T13:00:00.001Z', '2026-12-05T12:00:00Z'];
const SUBKEYS = ['k', 'j', 'city', '0'];

const scalar = fc.constantFrom(...SCALARS);
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { arbitrary: scalar, weight: 5 },
    { arbitrary: fc.array(tie('value'), { maxLength: 3 }), weight: 2 },
    { arbitrary: fc.dictionary(fc.constantFrom(...SUBKEYS), tie('value'), { maxKeys: 3 }), weight: 2 },
  ),
}));
/** Embedded documents from the pool, in both key orders: MongoDB compares documents by field order, the engine does not. */
const documentValue = fc.constantFrom({ k: 'a', j: 1 }, { j: 1, k: 'a' }, { city: 'a' }, {}, [{ k: 'a', j: 1 }], [1, 'a'], ['a', 1], []);
const anyValue = fc.oneof({ arbitrary: value, weight: 4 }, { arbitrary: documentValue, weight: 1 });

const ATTRIBUTE_KEYS = ['a', 'b', 'tags', 'addr', '0', '$x'];
const RESOURCE_PATHS = [
  'uri',
  'attributes.a',
  'attributes.b',
  'attributes.tags',
  'attributes.tags.0',
  'attributes.tags.1',
  'attributes.addr.city',
  'attributes.addr.k',
  'attributes.addr.0',
  'attributes.addr.k.0',
  'attributes.0',
  'attributes.$x',
  'attributes.a.k',
];
const PRINCIPAL_KEYS = ['role', 'level'];
const PRINCIPAL_PATHS = ['uri', 'attributes.role', 'attributes.level'];
const ACTIONS = ['read', 'write'];

const PRINCIPAL_VALUES = ['r', 's', 0, 1, 2, 3];

function conditionValue(operator: Operator, values: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  switch (operator) {
    case 'startswith':
    case 'endswith':
      return fc.constantFrom('', 'a', 'b', 'ab', 'a\n', '\n', '.', '$', '😀', 'x.y');
    case 'gt':
    case '>':
    case 'gte':
    case '>=':
    case 'lt':
    case '<':
    case 'lte':
    case '<=':
      return fc.constantFrom(-1, 0, 1, 1.5, 2);
    case 'in':
    case 'not_in':
      return fc.array(values, { maxLength: 3 });
    case 'exists':
    case 'not_exists':
      return fc.constant(undefined);
    case 'matches':
    case 'not_matches':
      return fc.constantFrom('a', '^a', 'b$', '^$', '.', '^[ab]+$', 'é', '^10\\.');
    case 'in_cidr':
    case 'not_in_cidr':
      return fc.constantFrom<unknown>('10.0.0.0/8', '2001:db8::/32', ['192.0.2.0/24', '10.1.0.0/16'], '0.0.0.0/0');
    case 'before':
    case 'after':
      return fc.constantFrom('2026-11-28T12:00:00Z', '2026-11-28T13:00:00+01:00', '2000-01-01T00:00:00Z');
    case 'during':
      return fc.constantFrom<unknown>({ zone: 'UTC', days: ['sat'] }, { zone: 'Europe/Berlin', from: '09:00', to: '18:00' });
    case 'within':
      return fc.oneof(SPANS, SPANS.map((span) => ({ ...span, of: '2026-11-28T12:00:00Z' })));
    default:
      return values;
  }
}

/** Spans `within` takes, around the checks' times (see the date-times the resources hold). */
const SPANS = fc.constantFrom<{ last?: string; next?: string }>({ last: 'P1D' }, { next: 'PT1H' }, { last: 'PT30M', next: 'P7D' });

const condition = (paths: string[], values: fc.Arbitrary<unknown>): fc.Arbitrary<Condition> =>
  fc
    .record({ path: fc.constantFrom(...paths), operator: fc.constantFrom(...OPERATORS) })
    .chain(({ path, operator }) => conditionValue(operator, values).map((value) => ({ path, operator, value })));

/** The operators that take a `value_from`. */
const RELATING_OPERATORS = OPERATORS.filter((operator) => OPERATOR_DEFINITIONS[operator].refusesValueFrom === undefined);

/** What `value_from` may name from a resource condition: the principal, the action, the context, or another value of the resource. */
const REFERENCES = [
  ...PRINCIPAL_PATHS.map((path) => `principal.${path}`),
  'action.name',
  'action.attributes.soft',
  'action.attributes.level',
  'context.attributes.level',
  'context.attributes.tags',
  ...RESOURCE_PATHS.map((path) => `resource.${path}`),
];

/** A condition with `value_from`, and with a span for `within`, whose value says how it relates to what the reference reads. */
const relating = (paths: readonly string[], references: readonly string[]): fc.Arbitrary<Condition> =>
  fc
    .record({ path: fc.constantFrom(...paths), operator: fc.constantFrom(...RELATING_OPERATORS), value_from: fc.constantFrom(...references) })
    .chain((relation) => (OPERATOR_DEFINITIONS[relation.operator].anchored === undefined ? fc.constant(relation) : SPANS.map((value) => ({ ...relation, value }))));

/** A resource condition with `value_from` (never a presence operator, which takes none). */
const relation: fc.Arbitrary<Condition> = relating(RESOURCE_PATHS, REFERENCES);

/** A principal, action or context condition with `value_from` naming the resource: the resource is open in a plan. */
const readsResource = (paths: string[]): fc.Arbitrary<Condition> => relating(paths, RESOURCE_PATHS.map((path) => `resource.${path}`));

/** Conditions of the action or the context on the values the checks carry. */
const actionCondition = fc.oneof(
  { arbitrary: condition(['attributes.soft', 'attributes.level', 'name'], fc.constantFrom(true, false, 0, 1, 2, 'read')), weight: 2 },
  { arbitrary: fc.record({ path: fc.constantFrom('attributes.level'), operator: fc.constantFrom<Operator>('==', 'lt', 'in'), value_from: fc.constantFrom('principal.attributes.level', 'context.attributes.level') }), weight: 2 },
  { arbitrary: readsResource(['attributes.soft', 'attributes.level', 'name']), weight: 1 },
);
const contextCondition = fc.oneof(
  { arbitrary: condition(['attributes.level', 'attributes.tags'], fc.constantFrom(0, 1, 2, 'a', ['a'])), weight: 4 },
  { arbitrary: readsResource(['attributes.level', 'attributes.tags']), weight: 1 },
);

const principalValue = fc.oneof({ arbitrary: fc.constantFrom(...PRINCIPAL_VALUES), weight: 4 }, { arbitrary: anyValue, weight: 1 });

/** A group of one or two alternatives, each of one or two of `conditions`, and now and then a reference to set `setName` (in a rule of a policy with sets). */
const group = (conditions: fc.Arbitrary<Condition>, setName?: string): fc.Arbitrary<SetItem> => {
  const items: fc.Arbitrary<AlternativeItem> =
    setName === undefined ? conditions : fc.oneof({ arbitrary: conditions, weight: 4 }, { arbitrary: fc.constant({ set: setName }), weight: 1 });
  return fc
    .tuple(fc.constantFrom('any_of' as const, 'none_of' as const), fc.array(fc.array(items, { minLength: 1, maxLength: 2 }), { minLength: 1, maxLength: 2 }))
    .map(([kind, alternatives]) => (kind === 'any_of' ? { any_of: alternatives } : { none_of: alternatives }));
};

const principalCondition = fc.oneof({ arbitrary: condition(PRINCIPAL_PATHS, principalValue), weight: 6 }, { arbitrary: readsResource(PRINCIPAL_PATHS), weight: 1 });
const resourceCondition = fc.oneof({ arbitrary: condition(RESOURCE_PATHS, anyValue), weight: 4 }, { arbitrary: relation, weight: 1 });

/** `items`, and a reference to set `name` where the policy defines its sets. */
const orSet = (items: fc.Arbitrary<ConditionItem>, name: string, withSets: boolean): fc.Arbitrary<ConditionItem> =>
  withSets ? fc.oneof({ arbitrary: items, weight: 7 }, { arbitrary: fc.constant<ConditionItem>({ set: name }), weight: 1 }) : items;

const rule = (name: string, withSets: boolean) =>
  fc.record({
    name: fc.constant(name),
    effect: fc.constantFrom('allow' as const, 'deny' as const),
    principal_conditions: fc.array(
      orSet(fc.oneof({ arbitrary: principalCondition, weight: 6 }, { arbitrary: group(principalCondition, withSets ? 'staff' : undefined), weight: 1 }), 'staff', withSets),
      { maxLength: 1 },
    ),
    resource_conditions: fc.oneof(
      { arbitrary: fc.constant<ConditionItem[]>([]), weight: 1 },
      {
        arbitrary: fc.array(orSet(fc.oneof({ arbitrary: resourceCondition, weight: 8 }, { arbitrary: group(resourceCondition, withSets ? 'shared' : undefined), weight: 1 }), 'shared', withSets), {
          minLength: 1,
          maxLength: 3,
        }),
        weight: 4,
      },
    ),
    action_conditions: fc.oneof({ arbitrary: fc.constant<Condition[]>([]), weight: 4 }, { arbitrary: fc.array(actionCondition, { minLength: 1, maxLength: 2 }), weight: 1 }),
    context_conditions: fc.oneof({ arbitrary: fc.constant<Condition[]>([]), weight: 4 }, { arbitrary: fc.array(contextCondition, { minLength: 1, maxLength: 2 }), weight: 1 }),
    actions: fc.subarray(ACTIONS, { minLength: 1 }),
  });

/** Most policies unscoped; some scoped to the type of the resources `doc:1` and `doc:2`, or to another. */
const scope = fc.oneof({ arbitrary: fc.constant(undefined), weight: 6 }, { arbitrary: fc.constantFrom<string[]>(['doc'], ['img'], ['doc', 'img']), weight: 1 });

/** The sets rules refer to, when the policy defines them (a reference to a set it does not define never holds): one for principals, one for resources. */
const conditionSets = fc.option(
  fc.record({
    staff: fc.array(fc.oneof({ arbitrary: principalCondition, weight: 3 }, { arbitrary: group(principalCondition), weight: 1 }), { minLength: 1, maxLength: 2 }),
    shared: fc.array(fc.oneof({ arbitrary: resourceCondition, weight: 3 }, { arbitrary: group(resourceCondition), weight: 1 }), { minLength: 1, maxLength: 2 }),
  }),
  { nil: undefined, freq: 3 },
);

const policy = (index: number): fc.Arbitrary<Policy> =>
  fc
    .tuple(fc.array(fc.nat(), { minLength: 1, maxLength: 4 }), fc.constantFrom('allow' as const, 'deny' as const, 'none' as const), scope, conditionSets)
    .chain(([rules, defaultEffect, types, sets]) =>
      fc.tuple(...rules.map((_, ruleIndex) => rule(`r${ruleIndex}`, sets !== undefined))).map((built) => ({
        version: '1.0',
        name: `p${index}`,
        description: null,
        ...(types === undefined ? {} : { resource_types: types }),
        ...(sets === undefined ? {} : { condition_sets: sets }),
        rules: built,
        default_effect: defaultEffect,
      })),
    );

export const policies: fc.Arbitrary<Policy[]> = fc
  .oneof({ arbitrary: fc.constant(0), weight: 1 }, { arbitrary: fc.integer({ min: 1, max: 4 }), weight: 12 })
  .chain((count) => (count === 0 ? fc.constant([]) : fc.tuple(...Array.from({ length: count }, (_, index) => policy(index)))));

const attributes = (keys: string[], values: fc.Arbitrary<unknown>) =>
  fc.dictionary(fc.constantFrom(...keys), values, { maxKeys: keys.length });

/** What the property needs of a principal: attributes and maybe a uri. */
export interface PrincipalCase {
  uri: string | undefined;
  attributes: Record<string, unknown>;
}

export const principal: fc.Arbitrary<PrincipalCase> = fc.record({
  uri: fc.option(fc.constantFrom('user:alice', 'user:bob'), { nil: undefined }),
  attributes: attributes(PRINCIPAL_KEYS, principalValue),
});

/** A resource as stored in a collection: a uri (or none) and its attributes. */
export interface ResourceDocument {
  uri?: string;
  attributes: Record<string, unknown>;
}

/** Values near `value`: itself, in a list (alone, with another, nested), in a document, as another type, or just off. */
function nearValues(value: unknown): unknown[] {
  const near: unknown[] = [value, [value], [value, 'b'], ['b', value], [[value]], { k: value }, [{ k: value }]];
  if (typeof value === 'number') near.push(String(value), value + 1, value - 0.5, value === 0 ? false : true);
  if (typeof value === 'string') near.push(`${value}z`, `z${value}`, `${value}\n`, value.toUpperCase(), Number(value) || 1);
  if (typeof value === 'boolean') near.push(String(value), Number(value));
  if (value === null) near.push('null', 0);
  if (Array.isArray(value)) near.push(...value, [...value].reverse(), [...value, 'b'], value.slice(1));
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const entries = Object.entries(value);
    // Reordered, one key more, and the same size with a key renamed.
    near.push(Object.fromEntries(entries.reverse()), { ...value, extra: 1 }, Object.fromEntries(entries.map(([key, item], index) => [index === 0 ? `${key}x` : key, item])));
  }
  return near;
}

/** An attribute holding `leaf` at `steps` below it, directly or with a list on the way (which the engine does not walk into). */
function nestings(steps: readonly string[], leaf: unknown): unknown[] {
  if (steps.length === 0) return [leaf];
  const [step, ...rest] = steps as [string, ...string[]];
  return nestings(rest, leaf).flatMap((inner) => {
    const shapes: unknown[] = [{ [step]: inner }, [{ [step]: inner }]];
    if (/^[0-9]+$/.test(step)) shapes.push(Object.assign(new Array(Number(step) + 1).fill('b'), { [Number(step)]: inner }), [inner]);
    return shapes;
  });
}

/** Values the principal, the action and the context of a case may hold, for the resource to meet. */
const KNOWN_PART_VALUES: unknown[] = [...PRINCIPAL_VALUES, 'user:alice', 'read', true, 'a'];

/** Values two values of the resource related by a condition hold: scalars, lists, documents nested in both (in both key orders). */
const RELATED_VALUES: unknown[] = ['a', 1, null, ['a', 1], { k: 'a' }, { k: 'a', j: 1 }, { j: 1, k: 'a' }, [{ k: 'a', j: [1, { city: 'a', k: null }] }], { k: { j: ['a'], city: { k: 1, j: 2 } }, j: [] }];

/** `value` with every document's keys in reverse order, and with its last leaf changed when `change` is set: equal, or unequal at the bottom only. */
function reordered(value: unknown, change: boolean): unknown {
  if (Array.isArray(value)) return value.map((item, index) => reordered(item, change && index === value.length - 1));
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value);
    return Object.fromEntries(entries.map(([key, item], index) => [key, reordered(item, change && index === entries.length - 1)]).reverse());
  }
  return change ? [value] : value;
}

/** `left` and `right` merged key by key where both are documents, or undefined where they conflict. */
function merged(left: unknown, right: unknown): unknown {
  const isDocument = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!isDocument(left) || !isDocument(right)) return undefined;
  const result: Record<string, unknown> = { ...left };
  for (const [key, value] of Object.entries(right)) {
    if (!Object.hasOwn(result, key)) result[key] = value;
    else if ((result[key] = merged(result[key], value)) === undefined) return undefined;
  }
  return result;
}

/** Attributes holding `value` at `path` (`attributes.<key>...`), directly or with a list on the way. */
function holding(path: string, value: unknown): Record<string, unknown>[] {
  const [, key, ...steps] = path.split('.') as [string, string, ...string[]];
  return nestings(steps, value).map((nested) => ({ [key]: nested }));
}

/**
 * Attributes aimed at the policies' own resource conditions: for each condition, its path holding
 * values near the condition's, so that lists, mistyped values and near misses meet every operator;
 * and for each principal, action or context condition naming the resource, the path it names
 * holding values near those the other parts of a case hold. Each item is attributes to merge in.
 */
function aimedAttributes(policies: readonly Policy[]): Record<string, unknown>[] {
  const aimed: Record<string, unknown>[] = [];
  const aim = (path: string, values: unknown[]) => {
    for (const near of values.flatMap(nearValues)) aimed.push(...holding(path, near));
  };
  const rules = policies.flatMap((policy) => policy.rules.map((rule) => ({ rule, policy })));
  for (const { path, operator, value, value_from } of rules.flatMap(({ rule, policy }) => flatConditions(rule.resource_conditions, ownSets(policy)))) {
    if (path === 'uri') continue;
    if (operator === 'within') aim(path, DATE_TIMES);
    if (value_from !== undefined || operator === 'within') continue;
    // A presence condition has no value: any value there makes it present.
    aim(path, value === undefined ? ['a', null] : Array.isArray(value) ? [value, ...value] : [value]);
  }
  for (const { value_from } of rules.flatMap(({ rule, policy }) => flatConditions([...rule.principal_conditions, ...(rule.action_conditions ?? []), ...(rule.context_conditions ?? [])], ownSets(policy)))) {
    if (value_from?.startsWith('resource.attributes.')) aim(value_from.slice('resource.'.length), KNOWN_PART_VALUES);
  }
  return aimed;
}

/**
 * For each relation between two attributes of the resource, both holding a value and one of its
 * `partners` (either way round). Each item is attributes to merge in.
 */
function relatedAttributes(policies: readonly Policy[], partners: (value: unknown) => unknown[]): Record<string, unknown>[] {
  const related: Record<string, unknown>[] = [];
  for (const { path, value_from } of policies.flatMap((policy) => policy.rules.flatMap((rule) => flatConditions(rule.resource_conditions, ownSets(policy))))) {
    const other = value_from?.slice('resource.'.length);
    if (other === undefined || !value_from!.startsWith('resource.attributes.') || path === 'uri' || path.startsWith(`${other}.`) || other.startsWith(`${path}.`)) continue;
    for (const [one, partner] of RELATED_VALUES.flatMap((value) => partners(value).map((each) => [value, each]))) {
      for (const [here, there] of [[one, partner], [partner, one]]) {
        const both = merged(holding(path, here)[0], holding(other, there)[0]);
        if (both !== undefined) related.push(both as Record<string, unknown>);
      }
    }
  }
  return related;
}

/** Partners alike down to the bottom: every document's keys reordered, equal or with the last leaf changed. */
const alikeToTheBottom = (value: unknown) => [reordered(value, false), reordered(value, true)];

/** Up to `count` of `items` (none when there are none). */
const someOf = (items: Record<string, unknown>[], count: number) => (items.length === 0 ? fc.constant([]) : fc.array(fc.constantFrom(...items), { maxLength: count }));

const resourcesFor = (policies: readonly Policy[]): fc.Arbitrary<ResourceDocument[]> => {
  const attributeValues = fc
    .tuple(attributes(ATTRIBUTE_KEYS, anyValue), someOf(aimedAttributes(policies), 3), someOf(relatedAttributes(policies, nearValues), 2), someOf(relatedAttributes(policies, alikeToTheBottom), 1))
    .map(([random, aimed, near, alike]) => Object.assign({}, random, ...aimed, ...near, ...alike) as Record<string, unknown>);
  return fc.array(
    fc.record({ uri: fc.constantFrom('doc:1', 'doc:2', 'img:1', 'a', 'ab'), attributes: attributeValues }, { requiredKeys: ['attributes'] }),
    { minLength: 1, maxLength: 25 },
  );
};

/** Resource attributes the caller states as known (often none). */
export const knownAttributes: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  { arbitrary: fc.constant({}), weight: 3 },
  { arbitrary: attributes(['a', 'tags'], anyValue), weight: 1 },
);

export const action = fc.oneof({ arbitrary: fc.constantFrom(...ACTIONS), weight: 9 }, { arbitrary: fc.constant('delete'), weight: 1 });

/** The MongoDB layouts the filter must work with: attributes embedded (default), at the top level, or deeper. */
export const layouts: fc.Arbitrary<MongoFilterOptions> = fc.constantFrom(
  { attributesPrefix: 'attributes.', uriField: 'uri' },
  { attributesPrefix: '', uriField: '_uri' },
  { attributesPrefix: 'meta.attributes.', uriField: 'meta.uri' },
);

export interface PlanCase {
  policies: Policy[];
  principal: PrincipalCase;
  action: string;
  /** The action's attributes and the context the plan is asked with. */
  actionAttributes: Record<string, unknown>;
  context: Record<string, unknown>;
  /** The decision's time. */
  time: string;
  known: Record<string, unknown>;
  resources: ResourceDocument[];
  layout: MongoFilterOptions;
}

/** As JSON carries it: plain objects (fast-check's dictionaries have no prototype), no undefined. */
const overTheWire = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

export const planCase: fc.Arbitrary<PlanCase> = policies
  .chain((drawn) =>
    fc.record({
      policies: fc.constant(drawn),
      principal,
      action,
      actionAttributes: attributes(['soft', 'level'], fc.constantFrom(true, false, 0, 1, 2, 'a')),
      context: attributes(['level', 'tags'], fc.constantFrom(0, 1, 2, 'a', ['a'], 'ab')),
      time: fc.constantFrom(...DECISION_TIMES),
      known: knownAttributes,
      resources: resourcesFor(drawn),
      layout: layouts,
    }),
  )
  .map(overTheWire);

/** The resource `/check` decides for a document: its own attributes, with the known ones as stated. */
export function resourceEntity(document: ResourceDocument, known: Record<string, unknown> = {}): ResolvedEntity {
  return { uri: document.uri, attributes: new Map(Object.entries({ ...document.attributes, ...known })) };
}

/** The document as stored under a layout. */
export function storedDocument(document: ResourceDocument, layout: MongoFilterOptions): Record<string, unknown> {
  const stored: Record<string, unknown> = {};
  const put = (path: string, value: unknown) => {
    const steps = path.split('.');
    let container = stored;
    for (const step of steps.slice(0, -1)) container = (container[step] ??= {}) as Record<string, unknown>;
    container[steps.at(-1)!] = value;
  };
  if (layout.attributesPrefix === '') Object.assign(stored, document.attributes);
  else put(layout.attributesPrefix.slice(0, -1), document.attributes);
  if (document.uri !== undefined) put(layout.uriField, document.uri);
  return stored;
}

/**
 * The condition tree read directly, as its grammar defines it, each comparison as the reference reads a
 * condition: one that cannot be evaluated on its value counts as denying, so it holds under a `not`.
 */
export function treeHolds(tree: ConditionTree, resource: ResolvedEntity, negated = false): boolean {
  if (typeof tree === 'boolean') return tree;
  if ('and' in tree) return tree.and.every((child) => treeHolds(child, resource, negated));
  if ('or' in tree) return tree.or.some((child) => treeHolds(child, resource, negated));
  if ('not' in tree) return !treeHolds(tree.not, resource, !negated);
  // A relation in a plan is between two values of the resource.
  return conditionHolds(tree, resource, { principal: { uri: undefined, attributes: new Map() }, resource, action: '' }, negated);
}

/**
 * Whether `error` is a plan refused as docs/evaluation.md says: a relation between a known value
 * and an open one of the resource by an operator that reads only one way, where some resource
 * attribute is known (`knownCount`), or where a principal, action or context condition relates
 * its own value to the resource by such an operator.
 */
/** Whether a plan's MongoDB filter was refused, as documented, for a condition whose operator MongoDB cannot state. */
export const noExactFilterAsDocumented = (unsupported: string) => /^condition .* ((not_)?(matches|in_cidr)|before|after|during|within) .* has no exact MongoDB filter: /.test(unsupported);

export function unstatableAsDocumented(error: unknown, knownCount: number): boolean {
  if (!(error instanceof PlanUnstatable)) return false;
  return knownCount > 0 || /^condition \S+ \S+ resource\.\S+, on the (principal|action|context),/.test(error.message);
}
