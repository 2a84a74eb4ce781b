import { ConditionCompiler, holdsFor } from '../engine/compile.js';
import type { ConditionTree, DecisionRequest } from '../engine/index.js';
import type { Condition } from '../schemas/policy.js';

/** Whether a plan's condition holds for the resource of a check. */
export type ConditionTest = (request: DecisionRequest) => boolean;

/**
 * A plan's condition (operators in their canonical spelling) as a test of a check's resource: each
 * comparison is compiled and read as the engine reads a resource condition with the same path,
 * operator and value (or `value_from`), so the test holds exactly for the resources the plan selects.
 */
export function conditionTest(tree: ConditionTree): ConditionTest {
  const compiler = new ConditionCompiler();
  const compiled = (node: ConditionTree): ConditionTest => {
    if (typeof node === 'boolean') return () => node;
    if ('and' in node) {
      const children = node.and.map(compiled);
      return (request) => children.every((child) => child(request));
    }
    if ('or' in node) {
      const children = node.or.map(compiled);
      return (request) => children.some((child) => child(request));
    }
    if ('not' in node) {
      const child = compiled(node.not);
      return (request) => !child(request);
    }
    const [condition] = compiler.list([node as Condition]);
    return (request) => holdsFor(condition!, condition!.lookup(request.resource, request), request);
  };
  return compiled(tree);
}
