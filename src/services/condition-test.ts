import { ConditionCompiler, holdsFor } from '../engine/compile.js';
import type { ConditionTree, DecisionRequest } from '../engine/index.js';
import type { Condition } from '../schemas/policy.js';

/** Whether a plan's condition holds for the resource of a check. */
export type ConditionTest = (request: DecisionRequest) => boolean;

/**
 * A plan's condition (operators in their canonical spelling) as a test of a check's resource: each
 * comparison is compiled and read as the engine reads a resource condition with the same path,
 * operator and value (or `value_from`), so the test holds exactly for the resources the plan selects.
 * A deny rule's conditions stand under a `not`: there, one that cannot be evaluated on its value holds,
 * as in the deny rule (see CompiledTest.undecidableHolds).
 */
export function conditionTest(tree: ConditionTree): ConditionTest {
  const compiler = new ConditionCompiler();
  const compiled = (node: ConditionTree, negated: boolean): ConditionTest => {
    if (typeof node === 'boolean') return () => node;
    if ('and' in node) {
      const children = node.and.map((child) => compiled(child, negated));
      return (request) => children.every((child) => child(request));
    }
    if ('or' in node) {
      const children = node.or.map((child) => compiled(child, negated));
      return (request) => children.some((child) => child(request));
    }
    if ('not' in node) {
      const child = compiled(node.not, !negated);
      return (request) => !child(request);
    }
    const [condition] = compiler.list([node as Condition], negated);
    return (request) => holdsFor(condition!, condition!.lookup(request.resource, request), request);
  };
  return compiled(tree, false);
}
