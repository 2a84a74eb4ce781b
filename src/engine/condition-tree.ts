import type { Operator } from '../schemas/policy.js';

/** A test of one resource path, as a policy's resource condition states it (operator in its canonical spelling). */
export interface Comparison {
  path: string;
  operator: Operator;
  value: unknown;
}

/**
 * What a plan says of the resource. Grammar:
 *
 *     tree       := true | false | { "and": [node, node, ...] } | { "or": [node, node, ...] } | { "not": node } | comparison
 *     comparison := { "path": "uri" | "attributes.<key>[.<key>|.<index>]...", "operator": <operator>, "value": <JSON> }
 *
 * A comparison holds exactly when a resource condition with the same path, operator and value would
 * (so it never holds for a missing path). Built only through `and`, `or` and `not` below, a tree is
 * simplified: `true`/`false` appear only as the whole tree, `and`/`or` have two or more distinct
 * children and never a child of their own kind, `not` never holds a `not`, and no `and` (`or`)
 * holds both a node and its negation.
 */
export type ConditionTree = boolean | { and: ConditionTree[] } | { or: ConditionTree[] } | { not: ConditionTree } | Comparison;

/** A key per distinct tree, memoized: simplification compares subtrees many times, and compiled comparisons are shared by every plan. */
const keys = new WeakMap<object, string>();

function keyOf(tree: ConditionTree): string {
  if (typeof tree === 'boolean') return String(tree);
  let key = keys.get(tree);
  if (key !== undefined) return key;
  if ('and' in tree) key = `&(${tree.and.map(keyOf).join(',')})`;
  else if ('or' in tree) key = `|(${tree.or.map(keyOf).join(',')})`;
  else if ('not' in tree) key = `!${keyOf(tree.not)}`;
  else key = JSON.stringify([tree.path, tree.operator, tree.value]);
  keys.set(tree, key);
  return key;
}

/** keyOf(not(tree)), without building the negation. */
const negationKey = (tree: Exclude<ConditionTree, boolean>): string => ('not' in tree ? keyOf(tree.not) : `!${keyOf(tree)}`);

export function not(tree: ConditionTree): ConditionTree {
  if (typeof tree === 'boolean') return !tree;
  if ('not' in tree) return tree.not;
  return { not: tree };
}

/** `and` and `or` alike: `absorbing` decides the whole (false for `and`), its opposite is dropped. */
function junction(kind: 'and' | 'or', children: readonly ConditionTree[]): ConditionTree {
  const absorbing = kind === 'or';
  const kept: ConditionTree[] = [];
  const seen = new Set<string>();
  const pending = [...children].reverse();
  while (pending.length > 0) {
    const child = pending.pop()!;
    if (typeof child === 'boolean') {
      if (child === absorbing) return absorbing;
      continue;
    }
    if (kind in child) {
      pending.push(...[...(child as Record<typeof kind, ConditionTree[]>)[kind]].reverse());
      continue;
    }
    const key = keyOf(child);
    if (seen.has(key)) continue;
    if (seen.has(negationKey(child))) return absorbing;
    seen.add(key);
    kept.push(child);
  }
  if (kept.length === 0) return !absorbing;
  if (kept.length === 1) return kept[0]!;
  if (kind === 'and') return { and: kept };
  const merged = mergeMemberships(kept);
  return merged.length === 1 ? merged[0]! : { or: merged };
}

/** `==` or `in` on a path: the values it accepts, or undefined for another comparison. */
const acceptedValues = (tree: ConditionTree): readonly unknown[] | undefined =>
  typeof tree === 'object' && 'path' in tree ? (tree.operator === '==' ? [tree.value] : tree.operator === 'in' ? (tree.value as unknown[]) : undefined) : undefined;

/**
 * In an `or`, `==` and `in` comparisons on one path become a single `in` (per-resource grants at
 * scale make one short list, and one `$in` in MongoDB, instead of thousands of branches).
 */
function mergeMemberships(children: ConditionTree[]): ConditionTree[] {
  const byPath = new Map<string, { at: number; values: unknown[]; seen: Set<string> }>();
  const merged: (ConditionTree | undefined)[] = [...children];
  children.forEach((child, index) => {
    const values = acceptedValues(child);
    if (values === undefined) return;
    const { path } = child as Comparison;
    const group = byPath.get(path);
    if (group === undefined) {
      byPath.set(path, { at: index, values: [...values], seen: new Set(values.map((value) => JSON.stringify(value))) });
      return;
    }
    for (const value of values) {
      const key = JSON.stringify(value);
      if (!group.seen.has(key)) group.values.push(value);
      group.seen.add(key);
    }
    merged[index] = undefined;
    merged[group.at] = { path, operator: 'in', value: group.values };
  });
  return merged.filter((child) => child !== undefined);
}

export const and = (children: readonly ConditionTree[]): ConditionTree => junction('and', children);
export const or = (children: readonly ConditionTree[]): ConditionTree => junction('or', children);

/** The tree as one line for people: `attributes.kind == "laptop" and not (uri startswith "doc:x")`. */
export function formatCondition(tree: ConditionTree): string {
  if (typeof tree === 'boolean') return String(tree);
  const operand = (child: ConditionTree) => (typeof child === 'object' && ('and' in child || 'or' in child) ? `(${formatCondition(child)})` : formatCondition(child));
  if ('and' in tree) return tree.and.map(operand).join(' and ');
  if ('or' in tree) return tree.or.map(operand).join(' or ');
  if ('not' in tree) return `not (${formatCondition(tree.not)})`;
  return `${tree.path} ${tree.operator} ${JSON.stringify(tree.value)}`;
}
