import { ANY_ACTION } from '../actions.js';
import type { Policy, Rule } from '../../schemas/policy.js';
import type { Location, ValidationIssue } from '../../schemas/errors.js';
import { append, Checking } from './shared.js';

// Actions that look like typos: named by one policy only, and nearly the same as another policy's.

/** The rows of withinEdits, reused: a report may compare thousands of actions. */
let scratch = new Int32Array(0);

/**
 * Whether two actions are at most `limit` single-character edits apart (a swap of neighbours
 * counts as one). Only the cells within `limit` of the diagonal are computed, in three rows that
 * are reused: linear in the length, however long the actions are.
 */
export function withinEdits(left: string, right: string, limit: number): boolean {
  if (Math.abs(left.length - right.length) > limit) return false;
  const beyond = limit + 1;
  const width = right.length + 1;
  if (scratch.length < 3 * width) scratch = new Int32Array(3 * width);
  let twoBack = scratch.subarray(0, width).fill(beyond);
  let previous = scratch.subarray(width, 2 * width).fill(beyond);
  let current = scratch.subarray(2 * width, 3 * width).fill(beyond);
  for (let j = 0; j <= Math.min(limit, right.length); j++) previous[j] = j;
  for (let i = 1; i <= left.length; i++) {
    const low = Math.max(1, i - limit);
    const high = Math.min(right.length, i + limit);
    // Left of the band: column 0 (i deletions), or a cell no cheaper path reaches.
    current[low - 1] = low === 1 && i <= limit ? i : beyond;
    let rowBest = current[low - 1]!;
    for (let j = low; j <= high; j++) {
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (left[i - 1] === right[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && left[i - 1] === right[j - 2] && left[i - 2] === right[j - 1]) best = Math.min(best, twoBack[j - 2]! + 1);
      current[j] = Math.min(best, beyond);
      rowBest = Math.min(rowBest, current[j]!);
    }
    if (rowBest > limit) return false;
    [twoBack, previous, current] = [previous, current, twoBack];
  }
  return previous[right.length]! <= limit;
}

const folded = (action: string) => action.toLowerCase().replace(/[-_ ]/g, '');

/** Where an action is named: in order across the set, its first naming and the first by another policy than the first's. */
interface Naming {
  first: number;
  firstPolicy: number;
  second: number | undefined;
}

/** Every action the policies name, for finding likely typos: by name, by folded spelling and by length, each looked up at once. */
export class ActionIndex {
  private readonly namings = new Map<string, Naming>();
  private readonly byFolded = new Map<string, string[]>();
  private readonly byLength = new Map<number, string[]>();

  constructor(policies: readonly Policy[]) {
    let order = 0;
    policies.forEach((policy, policyIndex) => {
      for (const rule of policy.rules) {
        for (const action of rule.actions) {
          order++;
          const naming = this.namings.get(action);
          if (naming === undefined) {
            this.namings.set(action, { first: order, firstPolicy: policyIndex, second: undefined });
            append(this.byFolded, folded(action), action);
            append(this.byLength, action.length, action);
          } else if (naming.second === undefined && naming.firstPolicy !== policyIndex) {
            naming.second = order;
          }
        }
      }
    });
  }

  /** Where a policy other than `policyIndex` first names `action`, in order across the set; undefined when none does. */
  namedElsewhere(action: string, policyIndex: number): number | undefined {
    const naming = this.namings.get(action);
    if (naming === undefined) return undefined;
    return naming.firstPolicy === policyIndex ? naming.second : naming.first;
  }

  /**
   * The first action, in order across the set, that a policy other than `policyIndex` names and
   * that is `action` spelled differently (case, `-`, `_`, spaces) or a few edits away from it.
   */
  nearest(action: string, policyIndex: number, checking: Checking): string | undefined {
    const limit = action.length > 4 ? 2 : 1;
    let best: { order: number; action: string } | undefined;
    const consider = (other: string, near: () => boolean) => {
      checking.step();
      const order = this.namedElsewhere(other, policyIndex);
      if (order === undefined || (best !== undefined && order >= best.order) || !near()) return;
      best = { order, action: other };
    };
    for (const other of this.byFolded.get(folded(action)) ?? []) consider(other, () => true);
    for (let length = action.length - limit; length <= action.length + limit; length++) {
      for (const other of this.byLength.get(length) ?? []) {
        consider(other, () => {
          checking.step(other.length * (2 * limit + 1));
          return withinEdits(action, other, limit);
        });
      }
    }
    return best?.action;
  }
}


/** Actions a rule names that no rule of any other policy names, when one that is nearly the same is named: likely a typo. */
export function lonelyActions(rule: Rule, policyIndex: number, actions: ActionIndex, at: Location, checking: Checking): ValidationIssue[] {
  return rule.actions.flatMap((action, index) => {
    if (action === ANY_ACTION || actions.namedElsewhere(action, policyIndex) !== undefined) return [];
    const near = actions.nearest(action, policyIndex, checking);
    if (near === undefined) return [];
    return [{ loc: [...at, 'actions', index], msg: `no rule of any other policy names action '${action}': did you mean '${near}'?`, type: 'unknown_action' }];
  });
}
