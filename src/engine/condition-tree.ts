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

/** A key per distinct tree, memoized: simplification compares subtrees many times. */
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
    if (seen.has(keyOf(not(child)))) return absorbing;
    seen.add(key);
    kept.push(child);
  }
  if (kept.length === 0) return !absorbing;
  if (kept.length === 1) return kept[0]!;
  return kind === 'and' ? { and: kept } : { or: kept };
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
