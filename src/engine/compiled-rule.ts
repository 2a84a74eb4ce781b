import type { Condition, ConditionGroup, GroupKind } from '../schemas/policy.js';
import type { CompilableItem, ResolvedSet } from './condition-items.js';
import type { Decision } from './decisions.js';
import type { Predicate, Relation } from './operators/index.js';
import type { Comparison } from './condition-tree.js';
import type { Lookup } from './paths.js';
import type { Reference, RequestLookup } from './references.js';

// What compiling a policy makes of its rules and conditions (compile.ts), as the rule index,
// evaluation, explanation and plans read them.

/** What evaluation reads of an item of a list of conditions, whether a condition or a group. */
interface CompiledTest {
  lookup: Lookup;
  /** The test of a condition with a `value`. */
  test: Predicate;
  /** For a condition with `value_from`: what it reads of the request, and how it relates the two values. */
  reference: RequestLookup | undefined;
  /** The part of the check and the path that `reference` reads. */
  referenced: Reference | undefined;
  relate: Relation;
  /** What the condition says where its path leads nowhere (see holdsFor). */
  holdsWhenMissing: boolean;
  /**
   * What the condition says where its test cannot evaluate the value it reads (see Predicate): it
   * holds in a deny rule and fails in an allow rule (read the other way round inside a `none_of`),
   * so that an evaluation error never allows and never escapes a deny. Conditions are shared by the
   * rules that read them alike, never between readings.
   */
  undecidableHolds: boolean;
}

export interface CompiledCondition extends CompiledTest {
  group: undefined;
  /** The condition as a plan states it when the entity is not known: operator in its canonical spelling (and `value_from` as written). */
  comparison: Comparison;
  /** The condition as written, for explanations and validation. */
  source: Condition;
}

/**
 * A group compiled: its lookup decides the whole group for the entity (true when it holds), which its
 * test reads, so that evaluation walks groups and conditions alike; explanations and plans read its
 * alternatives.
 */
export interface CompiledGroup extends CompiledTest {
  /** A set is a group of one alternative, the set's items (none for a set out of reach: undecidable, it fails closed); `from` names another policy's. */
  group: { kind: GroupKind | 'set'; name?: string; from?: string; alternatives: readonly (readonly CompiledItem[])[] };
  comparison: undefined;
  source: ConditionGroup | ResolvedSet;
}

export type CompiledItem = CompiledCondition | CompiledGroup;

export interface CompiledRule {
  /**
   * Where the rule stands among all rules, as one number: its policy's position in creation order
   * (see Snapshot.positions), then its place in the policy. Only comparisons mean anything.
   */
  order: number;
  /** Its policy's position in creation order: equal for rules of the same policy. */
  policyPosition: number;
  denies: boolean;
  principal: readonly CompiledItem[];
  resource: readonly CompiledItem[];
  /** Conditions on the action and on the context: most rules have none. */
  action: readonly CompiledItem[];
  context: readonly CompiledItem[];
  /** The decision this rule gives when it is the one that counts, built once. */
  decision: Decision;
}

/** Compiles a list of conditions, sharing what it compiled before (see ConditionCompiler); `undecidableHolds`: see CompiledTest (a deny rule's: true). */
export interface ConditionLists {
  list(conditions: readonly CompilableItem[], undecidableHolds?: boolean): readonly CompiledItem[];
}
