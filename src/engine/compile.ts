import type { Condition, ConditionGroup, Policy, SetItem } from '../schemas/policy.js';
import { partOf, type DecisionRequest, type ResolvedEntity } from './entity.js';
import { DENIED_WITHOUT_POLICIES, ruleDecision, type Decision } from './decisions.js';
import { CANONICAL_OPERATOR, OPERATOR_DEFINITIONS } from './operators/index.js';
import type { Comparison } from './condition-tree.js';
import { compileLookup, MISSING, type Lookup } from './paths.js';
import { compileReference, parseReference, type Reference } from './references.js';
import type { CompiledCondition, CompiledGroup, CompiledItem, CompiledRule, ConditionLists } from './compiled-rule.js';
import { ActionRules, type IndexableRule } from './rule-index.js';
import { groupParts, isGroup, isSetReference, ownSets, resolveSets, sharedSets, type CompilableItem, type ResolvedSet, type SetsInReach } from './condition-items.js';
import { lendersTo } from './shared-sets.js';
import { counted, defaultDecisionOf, NO_DEFAULTS, ScopedDefaults, scopeCondition, type Defaults } from './scope.js';
import { ANY_ACTION } from './actions.js';

/** Every policy compiled for evaluation, under the store revision it was built from. */
export interface Snapshot {
  revision: number;
  policyCount: number;
  /** Rules covering each action, indexed by the values they demand. */
  rulesByAction: ReadonlyMap<string, ActionRules>;
  /** The decision when no rule matches: from the policies' default effects (see fallbackFor where some are scoped). */
  fallback: Decision;
  /** The default effects by resource type, when some policy is scoped to types. */
  scopes: ScopedDefaults | undefined;
  /** The policies compiled, in creation order. */
  policies: readonly Policy[];
  /** Each policy's position in creation order (increasing; the store's, when it keeps them), by index in `policies`. */
  positions: readonly number[];
  /** Each policy's rules compiled, by index in `policies`, then in rule order. */
  rules: readonly (readonly CompiledRule[])[];
  /** What deriving the next snapshot from this one needs (see derive). */
  lineage: Lineage;
}

/** Shared by a snapshot and those derived from it; never read by evaluation. */
interface Lineage {
  /** Interns conditions across the lineage: it only grows, so a snapshot in use never sees it change. */
  conditions: ConditionCompiler;
  /** The positions given did not fit in rule orders (see RULE_SLOTS): they are indexes, and changes cannot be placed among them. */
  renumbered: boolean;
  /**
   * The policies whose sets others take (by `from`; it may name more than are taken now): a change
   * of one changes the rules of those that take them, so it is compiled afresh, never derived.
   */
  lenders: ReadonlySet<string>;
  /** How many policies the last full compile held, and how many changes were derived since. */
  compiledPolicies: number;
  derivedChanges: number;
  /** The policies' default effects, counted: the fallback without looking at them all. */
  defaults: Defaults;
  /** Each policy's position by name, shared by the whole lineage (see positionsByName). */
  names: PositionsByName;
}

/**
 * Each policy's position by name, for one snapshot of a lineage (`of`): the one the last change was
 * derived into. It moves on with each derived change instead of being copied, so a change finds the
 * policy it replaces without looking through them all; deriving from another snapshot of the
 * lineage rebuilds it. Evaluation never reads it.
 */
interface PositionsByName {
  of: Snapshot | undefined;
  positions: Map<string, number>;
}

/** The position of each of `snapshot`'s policies by name. */
function positionsByName(snapshot: Snapshot): Map<string, number> {
  const { names } = snapshot.lineage;
  if (names.of !== snapshot) {
    names.positions = new Map(snapshot.policies.map((policy, index) => [policy.name, snapshot.positions[index]!]));
    names.of = snapshot;
  }
  return names.positions;
}

/**
 * What identifies a condition: the JSON text of its (path, operator, value) tuple, or (path,
 * operator, null, value_from) for a reference, which no other condition has, whatever characters
 * its path or value hold (a joined key would not be: a path holding the separator could spell
 * another policy's conditions and take their place).
 */
export const conditionKey = ({ path, operator, value, value_from }: Pick<Condition, 'path' | 'operator' | 'value' | 'value_from'>): string => {
  if (value_from !== undefined) return JSON.stringify([path, operator, value ?? null, value_from]);
  return JSON.stringify(value === undefined ? [path, operator] : [path, operator, value]);
};

/** The condition as a plan states it: operator in its canonical spelling, no `value` for presence, `value_from` as written. */
function comparisonOf({ path, operator, value }: Condition, value_from: string | undefined): Comparison {
  const canonical = CANONICAL_OPERATOR[operator];
  if (value_from !== undefined) return value === undefined ? { path, operator: canonical, value_from } : { path, operator: canonical, value, value_from };
  return value === undefined ? { path, operator: canonical } : { path, operator: canonical, value };
}

const UNUSED_TEST = () => false;

/**
 * Compiles conditions once per distinct condition and per distinct list: thousands of rules that
 * share `attributes.role == "reader"` share one compiled condition, which stays in the CPU cache.
 */
export class ConditionCompiler implements ConditionLists {
  private readonly conditions = new Map<string, CompiledItem>();
  private readonly lists = new Map<string, readonly CompiledItem[]>();

  list(items: readonly CompilableItem[], undecidableHolds = false): readonly CompiledItem[] {
    const keys = items.map((item) => readingKey(item, undecidableHolds));
    // The JSON text of the list of tuples: as distinct as the lists.
    const listKey = `[${keys.join(',')}]`;
    let list = this.lists.get(listKey);
    if (list === undefined) {
      list = items.map((item, index) => this.one(keys[index]!, item, undecidableHolds));
      this.lists.set(listKey, list);
    }
    return list;
  }

  private one(key: string, item: CompilableItem, undecidableHolds: boolean): CompiledItem {
    let compiled = this.conditions.get(key);
    if (compiled === undefined) {
      if (isSetReference(item)) compiled = this.set(item, undecidableHolds);
      else compiled = isGroup(item) ? this.group(item, undecidableHolds) : compileCondition(item, undecidableHolds);
      this.conditions.set(key, compiled);
    }
    return compiled;
  }

  private group(source: ConditionGroup, undecidableHolds: boolean): CompiledGroup {
    const { kind, alternatives: written } = groupParts(source);
    // Alternatives hold conditions and references to sets: the schema lets no group into a group (a
    // set's own groups refer to no set). A none_of holds where its alternatives do not: they are read
    // the other way round.
    const alternatives = written.map((conditions) => this.list(conditions, kind === 'none_of' ? !undecidableHolds : undecidableHolds));
    const someHolds = (entity: ResolvedEntity, request: DecisionRequest) => {
      for (const conditions of alternatives) if (firstFailingCondition(conditions, entity, request) === -1) return true;
      return false;
    };
    const holds: Lookup = kind === 'any_of' ? (entity, request) => someHolds(entity, request!) : (entity, request) => !someHolds(entity, request!);
    return compiledGroup(holds, { kind, alternatives }, source);
  }

  /**
   * A set compiles as a group of one alternative, its items. One out of reach (a shared set its
   * policy no longer defines) cannot be decided: it fails closed, as a condition that cannot be
   * evaluated does, holding in a deny rule and not in an allow rule (read the other way in a none_of).
   */
  private set(source: ResolvedSet, undecidableHolds: boolean): CompiledGroup {
    const { set: name, from } = source;
    if (source.items === undefined) return compiledGroup(() => undecidableHolds, { kind: 'set', name, from, alternatives: [] }, source, undecidableHolds);
    const items = this.list(source.items, undecidableHolds);
    return compiledGroup((entity, request) => firstFailingCondition(items, entity, request!) === -1, { kind: 'set', name, from, alternatives: [items] }, source);
  }
}

/** A group or set whose lookup `holds` decides it (see CompiledGroup); `undecidableHolds` for a set out of reach, which is undecidable. */
function compiledGroup(holds: Lookup, group: CompiledGroup['group'], source: CompiledGroup['source'], undecidableHolds = false): CompiledGroup {
  return {
    lookup: holds,
    test: GROUP_HOLDS,
    reference: undefined,
    referenced: undefined,
    relate: UNUSED_RELATION,
    holdsWhenMissing: false,
    undecidableHolds,
    group,
    comparison: undefined,
    source,
  };
}

function compileCondition(condition: Condition, undecidableHolds: boolean): CompiledCondition {
  const { operator, value } = condition;
  const definition = OPERATOR_DEFINITIONS[operator];
  const { anchored } = definition;
  const value_from = condition.value_from ?? anchored?.defaultReference(value);
  return {
    lookup: compileLookup(condition.path),
    // A relation's test is `relate`, with the value read from each request.
    test: value_from === undefined ? definition.build(value) : UNUSED_TEST,
    reference: value_from === undefined ? undefined : compileReference(value_from),
    referenced: value_from === undefined ? undefined : (parseReference(value_from) as Reference),
    relate: anchored === undefined || value_from === undefined ? definition.relate : anchored.relation(value),
    holdsWhenMissing: definition.holdsWhenMissing,
    undecidableHolds: definition.undecidable !== undefined && undecidableHolds,
    group: undefined,
    comparison: comparisonOf(condition, value_from),
    source: condition,
  };
}

/** The keys of a set's items, made once per set however many rules refer to it (a set is one array of its policy). */
const setKeys = new WeakMap<readonly SetItem[], string>();
function setItemsKey(items: readonly SetItem[]): string {
  let key = setKeys.get(items);
  if (key === undefined) setKeys.set(items, (key = `[${items.map(itemKey).join(',')}]`));
  return key;
}

/** A group's lookup decides it: true when it holds. */
const GROUP_HOLDS = (found: unknown) => found === true;
const UNUSED_RELATION = () => false;

/** Whether an item holds a condition whose test may be undecidable (see OperatorDefinition.undecidable). */
function mayBeUndecidable(item: CompilableItem): boolean {
  // A set out of reach is undecidable itself.
  if (isSetReference(item)) return item.items?.some(mayBeUndecidable) ?? true;
  if (isGroup(item)) return groupParts(item).alternatives.some((conditions) => conditions.some(mayBeUndecidable));
  return OPERATOR_DEFINITIONS[item.operator].undecidable !== undefined;
}

/**
 * What identifies an item read one way (see CompiledTest.undecidableHolds): its key, marked by the
 * reading when it holds a condition that may be undecidable; otherwise both readings are one.
 */
function readingKey(item: CompilableItem, undecidableHolds: boolean): string {
  const key = itemKey(item);
  return undecidableHolds && mayBeUndecidable(item) ? `!${key}` : key;
}

/**
 * What identifies an item of a list: its condition's key, or, for a group, its kind and the keys of
 * its alternatives' items, for a set its name and the keys of its items (an object, where a
 * condition's key is a list: sets of the same name in two policies differ by their items).
 */
export function itemKey(item: CompilableItem): string {
  if (isSetReference(item)) return `{"set":${JSON.stringify(item.set)},"from":${JSON.stringify(item.from ?? null)},"items":${item.items === undefined ? 'null' : setItemsKey(item.items)}}`;
  if (!isGroup(item)) return conditionKey(item);
  const { kind, alternatives } = groupParts(item);
  return `{"${kind}":[${alternatives.map((items) => `[${items.map(itemKey).join(',')}]`).join(',')}]}`;
}

/**
 * Whether `condition` holds for `found`, the value at its path (MISSING where it leads nowhere), in
 * `request`: a reference to a value the request does not have makes the condition false.
 */
export function holdsFor(condition: CompiledItem, found: unknown, request: DecisionRequest): boolean {
  if (found === MISSING) return condition.holdsWhenMissing;
  const { reference } = condition;
  if (reference === undefined) return condition.test(found) ?? condition.undecidableHolds;
  const other = reference(request);
  return other !== MISSING && (condition.relate(found, other) ?? condition.undecidableHolds);
}

/** The position of the first condition (or group) that `entity`, a part of `request`, does not satisfy, or -1 when all hold. */
export function firstFailingCondition(conditions: readonly CompiledItem[], entity: ResolvedEntity, request: DecisionRequest): number {
  for (let index = 0; index < conditions.length; index++) {
    const condition = conditions[index]!;
    if (!holdsFor(condition, condition.lookup(entity, request), request)) return index;
  }
  return -1;
}

export function ruleMatches(rule: CompiledRule, request: DecisionRequest): boolean {
  return (
    firstFailingCondition(rule.principal, request.principal, request) === -1 &&
    firstFailingCondition(rule.resource, request.resource, request) === -1 &&
    (rule.action.length === 0 || firstFailingCondition(rule.action, partOf(request, 'action'), request) === -1) &&
    (rule.context.length === 0 || firstFailingCondition(rule.context, partOf(request, 'context'), request) === -1)
  );
}

/** The decision when no rule matches, from the policies' default effects (see defaultDecisionOf). */
const fallbackDecision = (defaults: Defaults): Decision => defaultDecisionOf(defaults) ?? DENIED_WITHOUT_POLICIES;

/**
 * Room for each policy's rules in `order`: positions times this plus the rule's index stays a
 * safe integer for positions below 2^32 (4 billion policy creations), and the limit on rules per
 * policy (at most a million) stays below it.
 */
const RULE_SLOTS = 2 ** 21;
const MAX_POSITION = 2 ** 32;

const ordersFit = (policy: Policy, position: number) => policy.rules.length < RULE_SLOTS && position < MAX_POSITION;

/** The default decision for `request`: by the type of its resource where some policy is scoped. */
export const fallbackFor = (snapshot: Snapshot, request: DecisionRequest): Decision =>
  snapshot.scopes === undefined ? snapshot.fallback : snapshot.scopes.fallbackFor(request.resource.uri);

/** A rule's resource conditions as the engine tests them: after its policy's scope, when it has one. */
function resourceItems(policy: Policy, rule: Policy['rules'][number], sets: SetsInReach): readonly CompilableItem[] {
  const scope = scopeCondition(policy);
  const items = resolveSets(sets, rule.resource_conditions);
  return scope === undefined ? items : [scope, ...items];
}

/** Each rule of `policy` compiled, with its sources as the index reads them. */
const indexableRules = (policy: Policy, compiled: readonly CompiledRule[], sets: SetsInReach): IndexableRule[] =>
  policy.rules.map((rule, index) => ({ compiled: compiled[index]!, principal: resolveSets(sets, rule.principal_conditions), resource: resourceItems(policy, rule, sets) }));

/** A policy's rules compiled, with the sets in its reach, and how each action indexes them. */
function compilePolicy(policy: Policy, position: number, conditions: ConditionCompiler, sets: SetsInReach): { rules: CompiledRule[]; indexable: IndexableRule[] } {
  const rules: CompiledRule[] = [];
  policy.rules.forEach((rule, index) => {
    const denies = rule.effect === 'deny';
    const compiled: CompiledRule = {
      order: position * RULE_SLOTS + index,
      policyPosition: position,
      denies,
      principal: conditions.list(resolveSets(sets, rule.principal_conditions), denies),
      resource: conditions.list(resourceItems(policy, rule, sets), denies),
      action: conditions.list(resolveSets(sets, rule.action_conditions ?? []), denies),
      context: conditions.list(resolveSets(sets, rule.context_conditions ?? []), denies),
      decision: ruleDecision(rule.effect, rule.name, policy.name),
    };
    rules.push(compiled);
  });
  return { rules, indexable: indexableRules(policy, rules, sets) };
}

/** Adds each of `rules` to the list of every action it names (ANY_ACTION among them). */
function fileByAction(into: Map<string, IndexableRule[]>, policy: Policy, rules: readonly IndexableRule[]): void {
  policy.rules.forEach((rule, index) => {
    for (const action of new Set(rule.actions)) {
      const list = into.get(action);
      if (list === undefined) into.set(action, [rules[index]!]);
      else list.push(rules[index]!);
    }
  });
}

/**
 * The rules filed (by fileByAction, in (policy, rule) order) that cover `action`: those naming it and
 * those of every action, in (policy, rule) order, each once.
 */
function coveringAction(byAction: ReadonlyMap<string, IndexableRule[]>, action: string): IndexableRule[] {
  const named = byAction.get(action) ?? [];
  const everyAction = action === ANY_ACTION ? undefined : byAction.get(ANY_ACTION);
  if (everyAction === undefined) return named;
  return [...new Set([...named, ...everyAction])].sort((a, b) => a.compiled.order - b.compiled.order);
}

/**
 * The rules of `action` in `snapshot`: those that name it and those of every action, or, for an
 * action no rule names, those of every action alone.
 */
export const rulesFor = (snapshot: Snapshot, action: string): ActionRules | undefined => snapshot.rulesByAction.get(action) ?? snapshot.rulesByAction.get(ANY_ACTION);

/**
 * Compiles validated, normalized policies (in creation order). Run once per change, never per
 * request. `positions` are their places in creation order (increasing), the store's when it keeps
 * them, so that later changes can be derived (see derive); by default their indexes.
 */
export function compile(policies: readonly Policy[], revision: number, positions: readonly number[] = policies.map((_, index) => index)): Snapshot {
  const renumbered = !policies.every((policy, index) => ordersFit(policy, positions[index]!));
  if (renumbered) positions = policies.map((_, index) => index);
  const rulesOfAction = new Map<string, IndexableRule[]>();
  const conditions = new ConditionCompiler();
  const reach = sharedSets(policies);
  const rules = policies.map((policy, index) => {
    const compiled = compilePolicy(policy, positions[index]!, conditions, reach(policy));
    fileByAction(rulesOfAction, policy, compiled.indexable);
    return compiled.rules;
  });
  const rulesByAction = new Map([...rulesOfAction.keys()].map((action) => [action, ActionRules.build(coveringAction(rulesOfAction, action), conditions)]));
  const defaults = policies.reduce((counting, policy) => counted(counting, policy, 1), NO_DEFAULTS);
  const lenders = new Set(policies.flatMap(lendersTo));
  const lineage = { conditions, renumbered, lenders, compiledPolicies: policies.length, derivedChanges: 0, defaults, names: { of: undefined, positions: new Map() } };
  return snapshotOf(revision, { policies, positions, rules }, rulesByAction, lineage, ScopedDefaults.of(policies));
}

/** The snapshot of `policies` (with their positions and compiled rules, index for index) under `revision`. */
function snapshotOf(
  revision: number,
  { policies, positions, rules }: Pick<Snapshot, 'policies' | 'positions' | 'rules'>,
  rulesByAction: Snapshot['rulesByAction'],
  lineage: Lineage,
  scopes: ScopedDefaults | undefined,
): Snapshot {
  return { revision, policyCount: policies.length, rulesByAction, fallback: fallbackDecision(lineage.defaults), scopes, policies, positions, rules, lineage };
}

/** Where a compiled rule of `snapshot` comes from: its policy's index in `snapshot.policies`, and its own index among that policy's rules. */
export function sourceOf(snapshot: Snapshot, rule: CompiledRule): { policyIndex: number; ruleIndex: number } {
  return { policyIndex: sortedIndex(snapshot.positions, rule.policyPosition), ruleIndex: rule.order - rule.policyPosition * RULE_SLOTS };
}

/** A policy as it stands after a write: its content and position, or null when it was deleted. */
export interface ChangedPolicy {
  name: string;
  now: { policy: Policy; position: number } | null;
}

/** Derived changes a lineage takes before compiling everything again: at least this many, and half its policies. */
const RECOMPILE_AFTER = 64;

/** Where `position` goes in the increasing `positions`: the index of the first one not below it. */
function sortedIndex(positions: readonly number[], position: number): number {
  let low = 0;
  let high = positions.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (positions[middle]! < position) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * The snapshot of `previous`'s policies with `changes` applied, under `revision`: compiles only the
 * changed policies and re-indexes only the actions their rules cover, sharing everything else with
 * `previous`, which does not change (a reader may hold it). Undefined when the changes cannot be
 * placed (a position already taken, or too large): the caller loads the whole set instead.
 * Compiles everything again once the changes derived since the last full compile outnumber half
 * the policies: a new rule's filing key is chosen from the index as it stands, and the
 * selectivity of those choices drifts as the set changes.
 */
export function derive(previous: Snapshot, changes: readonly ChangedPolicy[], revision: number): Snapshot | undefined {
  if (previous.lineage.renumbered) return undefined;
  const lenders = new Set(previous.lineage.lenders);
  for (const { now } of changes) if (now !== null) for (const lender of lendersTo(now.policy)) lenders.add(lender);
  if (changes.some(({ name }) => lenders.has(name))) return undefined;
  // No lender changes here: what each policy takes, it takes from a policy as `previous` holds it.
  const reach = lenders.size === 0 ? ownSets : sharedSets(previous.policies);
  const policies = previous.policies.slice();
  const positions = previous.positions.slice();
  const rules = previous.rules.slice();
  const removedOf = new Map<string, IndexableRule[]>();
  const addedOf = new Map<string, IndexableRule[]>();
  const { conditions } = previous.lineage;
  let { defaults } = previous.lineage;
  const positionOf = positionsByName(previous);
  /** The position of each changed policy after the change (undefined: deleted), applied to positionOf once the change is derived. */
  const moved = new Map<string, number | undefined>();
  const addedPolicies: Policy[] = [];
  const removedPolicies: Policy[] = [];
  const stored = (name: string) => (moved.has(name) ? moved.get(name) : positionOf.get(name));
  for (const { name, now } of changes) {
    const was = stored(name);
    const at = was === undefined ? -1 : sortedIndex(positions, was);
    if (at !== -1) {
      if (policies[at]?.name !== name) return undefined;
      const old = policies[at]!;
      const oldRules = rules[at]!;
      fileByAction(removedOf, old, indexableRules(old, oldRules, reach(old)));
      removedPolicies.push(old);
      defaults = counted(defaults, old, -1);
      policies.splice(at, 1);
      positions.splice(at, 1);
      rules.splice(at, 1);
    }
    moved.set(name, now?.position);
    if (now === null) continue;
    const { policy, position } = now;
    const insertAt = sortedIndex(positions, position);
    if (!ordersFit(policy, position) || positions[insertAt] === position) return undefined;
    const compiled = compilePolicy(policy, position, conditions, reach(policy));
    fileByAction(addedOf, policy, compiled.indexable);
    defaults = counted(defaults, policy, 1);
    addedPolicies.push(policy);
    policies.splice(insertAt, 0, policy);
    positions.splice(insertAt, 0, position);
    rules.splice(insertAt, 0, compiled.rules);
  }
  const derivedChanges = previous.lineage.derivedChanges + changes.length;
  if (derivedChanges > Math.max(RECOMPILE_AFTER, previous.lineage.compiledPolicies / 2, policies.length / 2)) return compile(policies, revision, positions);
  const rulesByAction = new Map(previous.rulesByAction);
  // A rule of every action is among the rules of each action.
  const everyActionChanged = removedOf.has(ANY_ACTION) || addedOf.has(ANY_ACTION);
  for (const action of new Set([...removedOf.keys(), ...addedOf.keys(), ...(everyActionChanged ? previous.rulesByAction.keys() : [])])) {
    const removed = coveringAction(removedOf, action);
    // Changes come in any order; the index takes its rules in (policy, rule) order.
    const added = coveringAction(addedOf, action).sort((a, b) => a.compiled.order - b.compiled.order);
    // An action named for the first time starts from the rules of every action.
    const before = rulesFor(previous, action);
    const after = before === undefined ? ActionRules.build(added, conditions) : before.with(removed, added);
    if (after === undefined) rulesByAction.delete(action);
    else rulesByAction.set(action, after);
  }
  // Without scoped policies before, nothing was counted: the first scoped one counts them all.
  const scopes = previous.scopes?.with(addedPolicies, removedPolicies) ?? (addedPolicies.some((policy) => policy.resource_types !== undefined) ? ScopedDefaults.of(policies) : undefined);
  const derived = snapshotOf(revision, { policies, positions, rules }, rulesByAction, { ...previous.lineage, derivedChanges, defaults, lenders }, scopes);
  for (const [name, position] of moved) {
    if (position === undefined) positionOf.delete(name);
    else positionOf.set(name, position);
  }
  previous.lineage.names.of = derived;
  return derived;
}
