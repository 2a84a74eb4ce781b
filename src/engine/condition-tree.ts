import type { Operator } from '../schemas/policy.js';

/**
 * A test of one resource path, as a policy's resource condition states it (operator in its
 * canonical spelling; no value for `exists` and `not_exists`); with `value_from` instead of a
 * value, a relation between two values of the resource (`resource.<path>`).
 */
export interface Comparison {
  path: string;
  operator: Operator;
  value?: unknown;
  value_from?: string;
}

/**
 * What a plan says of the resource. Grammar:
 *
 *     tree       := true | false | { "and": [node, node, ...] } | { "or": [node, node, ...] } | { "not": node } | comparison
 *     comparison := { "path": "uri" | "attributes.<key>[.<key>|.<index>]...", "operator": <operator>, "value": <JSON> }
 *                 | { "path": ..., "operator": <operator>, "value_from": "resource.<path>" }
 *                 | { "path": ..., "operator": "within", "value": <span>, "value_from": "resource.<path>" }
 *                 | { "path": ..., "operator": "exists" | "not_exists" }
 *
 * A comparison holds exactly when a resource condition with the same path, operator and value would
 * (so it never holds for a missing path, but for `not_exists`). Built only through `and`, `or` and `not` below, a tree is
 * simplified: `true`/`false` appear only as the whole tree, `and`/`or` have two or more distinct
 * children and never a child of their own kind, `not` never holds a `not`, and no `and` (`or`)
 * holds both a node and its negation.
 */
export type ConditionTree = boolean | { and: ConditionTree[] } | { or: ConditionTree[] } | { not: ConditionTree } | Comparison;

/** A key per distinct tree, memoized: simplification compares subtrees many times, and compiled comparisons are shared by every plan. */
const keys = new WeakMap<object, string>();
/** The length of each tree's JSON text, memoized: junctions record theirs as they are made. */
const lengths = new WeakMap<object, number>();

function keyOf(tree: ConditionTree): string {
  if (typeof tree === 'boolean') return String(tree);
  let key = keys.get(tree);
  if (key !== undefined) return key;
  if ('and' in tree) key = `&(${tree.and.map(keyOf).join(',')})`;
  else if ('or' in tree) key = `|(${tree.or.map(keyOf).join(',')})`;
  else if ('not' in tree) key = `!${keyOf(tree.not)}`;
  else if (tree.value_from !== undefined) key = JSON.stringify([tree.path, tree.operator, tree.value ?? null, tree.value_from]);
  else key = JSON.stringify([tree.path, tree.operator, tree.value]);
  keys.set(tree, key);
  return key;
}

/** `{"path":` and `,"operator":` and `,"value":` and `}` around a comparison's three JSON values. */
const COMPARISON_FRAME = 30;
/** `{"and":[` and `]}`; `{"or":[` and `]}`; `{"not":` and `}`. */
const FRAME = { and: 10, or: 9, not: 8 } as const;

/** The length of a junction's JSON text, from its children's lengths. */
const junctionLength = (kind: Junction, childrenLength: number, count: number) => FRAME[kind] + childrenLength + count - 1;

/**
 * How many characters the tree's JSON text has, as an answer states it in the canonical spelling
 * (`JSON.stringify(tree).length`), without writing it: plans are held to a budget of it as they are built.
 */
export function jsonLength(tree: ConditionTree): number {
  if (typeof tree === 'boolean') return String(tree).length;
  let length = lengths.get(tree);
  if (length !== undefined) return length;
  if ('and' in tree || 'or' in tree) {
    const [kind, children] = 'and' in tree ? (['and', tree.and] as const) : (['or', tree.or] as const);
    let childrenLength = 0;
    for (const child of children) childrenLength += jsonLength(child);
    length = junctionLength(kind, childrenLength, children.length);
  } else if ('not' in tree) {
    length = FRAME.not + jsonLength(tree.not);
  } else if (tree.value_from !== undefined) {
    // The key is the JSON text of [path, operator, value or null, value_from]; the comparison adds `,"value_from":`, and leaves out `,"value":null` where it has no value.
    const withoutValue = tree.value === undefined ? ',"value":'.length + 'null'.length : 0;
    length = keyOf(tree).length - 5 + COMPARISON_FRAME + ',"value_from":'.length - withoutValue;
  } else if (tree.value === undefined) {
    // `exists` and `not_exists` have no value: the key spells it `null`, the comparison leaves out `,"value":`.
    length = keyOf(tree).length - 4 - 'null'.length + COMPARISON_FRAME - ',"value":'.length;
  } else {
    // The key is the JSON text of [path, operator, value]: the same three texts, framed by `[`, `]` and two commas.
    length = keyOf(tree).length - 4 + COMPARISON_FRAME;
  }
  lengths.set(tree, length);
  return length;
}

export function not(tree: ConditionTree): ConditionTree {
  if (typeof tree === 'boolean') return !tree;
  if ('not' in tree) return tree.not;
  return { not: tree };
}

type Junction = 'and' | 'or';
type Node = Exclude<ConditionTree, boolean>;

/** The values of `==` and `in` comparisons on one path, each once: primitives by themselves (1 and "1" stay apart), others by their JSON text. */
class Membership {
  readonly members: Comparison[] = [];
  readonly values: unknown[] = [];
  private readonly primitives = new Set<unknown>();
  private readonly others = new Set<string>();
  /** The JSON text of the values, with the commas between them. */
  private valuesLength = -1;
  private pathLength = 0;

  add(member: Comparison): void {
    if (this.members.push(member) === 1) this.pathLength = JSON.stringify(member.path).length;
    if (member.operator === '==') this.addValue(member.value);
    else for (const value of member.value as unknown[]) this.addValue(value);
  }

  /** The first member alone says what the members say together. */
  private get alone(): boolean {
    return this.members.length === 1 || (this.members[0]!.operator === '==' && this.values.length === 1);
  }

  /** The one comparison the members say together: the first member itself when it says it all alone. */
  merged(): Comparison {
    const [first] = this.members as [Comparison];
    if (this.alone) return first;
    const merged: Comparison = { path: first.path, operator: 'in', value: this.values };
    lengths.set(merged, this.length);
    return merged;
  }

  /** jsonLength of `merged()`. */
  get length(): number {
    const [first] = this.members as [Comparison];
    if (this.alone) return jsonLength(first);
    return this.pathLength + '"in"'.length + Math.max(this.valuesLength, 0) + '[]'.length + COMPARISON_FRAME;
  }

  private addValue(value: unknown): void {
    const isPrimitive = typeof value !== 'object' || value === null;
    const key = isPrimitive ? value : JSON.stringify(value);
    const seen = isPrimitive ? this.primitives : this.others;
    const before = seen.size;
    if (seen.add(key).size === before) return;
    this.values.push(value);
    this.valuesLength += (isPrimitive ? JSON.stringify(value) : (key as string)).length + 1;
  }
}

const isMembership = (node: Node): node is Comparison => 'path' in node && (node.operator === '==' || node.operator === 'in') && node.value_from === undefined;

/**
 * The children of an `and` (`or`) being built, simplified as they come: nested junctions of the
 * same kind flattened, duplicates dropped, and `decided` once a child decides the whole (the
 * absorbing constant, or a node beside its negation). Each child is looked up by its memoized key
 * in a set, so a junction of n children costs O(n). In an `or`, `==` and `in` comparisons on one
 * path become a single `in` where the first of them stood (per-resource grants at scale make one
 * list, and one `$in` in MongoDB, instead of thousands of branches); their values are told apart
 * by value, not by key.
 */
export class JunctionChildren {
  private readonly kept: (Node | Membership)[] = [];
  private decided = false;
  /** Keys of the kept children that are not negations, and of what the kept negations negate. */
  private readonly positive = new Set<string>();
  private readonly negated = new Set<string>();
  private readonly memberships = new Map<string, Membership>();
  /** The first kept child while it is alone, not yet keyed: a junction left with one child (a whole plan's `in`) is never keyed. */
  private unkeyed: Node | undefined;
  /** The JSON length of the kept children that are not memberships, and of those that are. */
  private nodesLength = 0;
  private membershipsLength = 0;

  constructor(private readonly kind: Junction) {}

  add(child: ConditionTree): void {
    if (this.decided) return;
    if (typeof child === 'boolean') {
      if (child === (this.kind === 'or')) this.decided = true;
      return;
    }
    if (this.kind in child) {
      for (const grandchild of (child as Record<Junction, ConditionTree[]>)[this.kind]) this.add(grandchild);
      return;
    }
    if (this.unkeyed !== undefined) {
      // A second child: the first must now be told apart from it (it met no other child, so it only needs filing).
      const first = this.unkeyed;
      this.unkeyed = undefined;
      if ('not' in first) this.negated.add(keyOf(first.not));
      else this.positive.add(keyOf(first));
    }
    if (this.kind === 'or' && isMembership(child)) return this.addMember(child);
    if (this.kept.length === 0) {
      this.unkeyed = child;
      this.keep(child);
      return;
    }
    const isNegation = 'not' in child;
    const key = keyOf(isNegation ? child.not : child);
    if ((isNegation ? this.negated : this.positive).has(key)) return;
    if ((isNegation ? this.positive : this.negated).has(key)) {
      this.decided = true;
      return;
    }
    (isNegation ? this.negated : this.positive).add(key);
    this.keep(child);
  }

  /**
   * At least the JSON length of `result()` as the children added so far make it, without making
   * it: exact, but where a member's negation decides the junction (which only shortens it).
   */
  get length(): number {
    if (this.decided) return jsonLength(this.kind === 'or');
    if (this.kept.length === 0) return jsonLength(this.kind !== 'or');
    const childrenLength = this.nodesLength + this.membershipsLength;
    return this.kept.length === 1 ? childrenLength : junctionLength(this.kind, childrenLength, this.kept.length);
  }

  /** The junction: the absorbing constant when decided, the other constant when nothing is left, else the node. */
  result(): ConditionTree {
    const absorbing = this.kind === 'or';
    // A member beside its negation decides an `or` too; members are keyed only when negations are there.
    const contradicted = (membership: Membership) => membership.members.some((member) => this.negated.has(keyOf(member)));
    if (this.negated.size > 0 && [...this.memberships.values()].some(contradicted)) this.decided = true;
    if (this.decided) return absorbing;
    const children = this.kept.map((child) => (child instanceof Membership ? child.merged() : child));
    if (children.length === 0) return !absorbing;
    if (children.length === 1) return children[0]!;
    const junction = this.kind === 'and' ? { and: children } : { or: children };
    lengths.set(junction, this.length);
    return junction;
  }

  private keep(child: Node): void {
    this.kept.push(child);
    this.nodesLength += jsonLength(child);
  }

  private addMember(member: Comparison): void {
    let membership = this.memberships.get(member.path);
    if (membership === undefined) {
      membership = new Membership();
      this.memberships.set(member.path, membership);
      this.kept.push(membership);
    } else {
      this.membershipsLength -= membership.length;
    }
    membership.add(member);
    this.membershipsLength += membership.length;
  }
}

/** `and` and `or` alike: the absorbing constant (false for `and`) decides the whole, its opposite is dropped. */
function junction(kind: Junction, children: readonly ConditionTree[]): ConditionTree {
  const simplified = new JunctionChildren(kind);
  for (const child of children) simplified.add(child);
  return simplified.result();
}

export const and = (children: readonly ConditionTree[]): ConditionTree => junction('and', children);
export const or = (children: readonly ConditionTree[]): ConditionTree => junction('or', children);

/** The tree with each comparison replaced by `replace`'s answer for it (the same tree when it changes none). */
export function mapComparisons(tree: ConditionTree, replace: (comparison: Comparison) => Comparison): ConditionTree {
  if (typeof tree === 'boolean') return tree;
  if ('and' in tree) return { and: tree.and.map((child) => mapComparisons(child, replace)) };
  if ('or' in tree) return { or: tree.or.map((child) => mapComparisons(child, replace)) };
  if ('not' in tree) return { not: mapComparisons(tree.not, replace) };
  return replace(tree);
}

/** The tree as one line for people: `attributes.kind == "laptop" and not (uri startswith "doc:x")`. */
export function formatCondition(tree: ConditionTree): string {
  if (typeof tree === 'boolean') return String(tree);
  const operand = (child: ConditionTree) => (typeof child === 'object' && ('and' in child || 'or' in child) ? `(${formatCondition(child)})` : formatCondition(child));
  if ('and' in tree) return tree.and.map(operand).join(' and ');
  if ('or' in tree) return tree.or.map(operand).join(' or ');
  if ('not' in tree) return `not (${formatCondition(tree.not)})`;
  if (tree.value_from !== undefined) return `${tree.path} ${tree.operator} ${tree.value === undefined ? '' : `${JSON.stringify(tree.value)} of `}${tree.value_from}`;
  return tree.value === undefined ? `${tree.path} ${tree.operator}` : `${tree.path} ${tree.operator} ${JSON.stringify(tree.value)}`;
}
