import t from 'tap';
import { OPERATORS, type Operator } from '../../src/schemas/policy.js';
import { OPERATOR_DEFINITIONS } from '../../src/engine/operators.js';
import { jsonEqual } from '../../src/engine/json-equal.js';
import { entity, holds, holdsFor, holdsWhenMissing } from './helpers.js';

/** The one assertion `check` needs, so any tap test object fits. */
interface Asserts {
  equal(found: unknown, wanted: unknown, message: string): unknown;
}

type Case = [conditionValue: unknown, attribute: unknown, expected: boolean];

/** Runs every case through the whole engine (compile + evaluate) and through the bare predicate. */
function check(t: Asserts, operators: Operator[], cases: Case[]): void {
  for (const operator of operators) {
    for (const [value, attribute, expected] of cases) {
      const label = `${JSON.stringify(attribute)} ${operator} ${JSON.stringify(value)}`;
      t.equal(holdsFor(operator, value, attribute), expected, `engine: ${label}`);
      t.equal(OPERATOR_DEFINITIONS[operator].build(value)(attribute), expected, `predicate: ${label}`);
    }
  }
}

t.test('every wire operator has a definition', async (t) => {
  t.same(Object.keys(OPERATOR_DEFINITIONS).sort(), [...OPERATORS].sort());
  t.equal(OPERATORS.length, 20);
});

t.test('exists and not_exists: whether the path leads to a value, whatever it is', async (t) => {
  const present: unknown[] = ['a', '', 0, false, null, [], {}, [null], { a: null }];
  for (const attribute of present) {
    t.equal(holdsFor('exists', undefined, attribute), true, `exists holds for ${JSON.stringify(attribute)}`);
    t.equal(holdsFor('not_exists', undefined, attribute), false, `not_exists fails for ${JSON.stringify(attribute)}`);
  }
  t.equal(holdsWhenMissing('exists', undefined), false, 'exists fails where nothing is');
  t.equal(holdsWhenMissing('not_exists', undefined), true, 'not_exists holds where nothing is');
  const nested = (operator: Operator, path: string, attributes: Record<string, unknown>) => holds({ path, operator }, entity(attributes));
  t.equal(nested('not_exists', 'attributes.a.b', { a: 'text' }), true, 'a path that steps into a string leads nowhere');
  t.equal(nested('not_exists', 'attributes.a.1', { a: ['x'] }), true, 'nor does a position past the end of a list');
  t.equal(nested('exists', 'attributes.a.0', { a: ['x'] }), true);
  t.equal(nested('not_exists', 'uri', {}), true, 'no uri named');
  t.equal(holds({ path: 'uri', operator: 'exists' }, entity({ a: 1 }, 'user:1')), true);
});

t.test('== and equals', async (t) => {
  check(t, ['==', 'equals'], [
    ['a', 'a', true],
    ['a', 'b', false],
    ['a', 'A', false],
    ['a', 'a ', false],
    ['', '', true],
    [1, 1, true],
    [1, 1.0, true],
    [1, 2, false],
    [1, '1', false],
    ['1', 1, false],
    [0, false, false],
    [false, 0, false],
    [true, true, true],
    [true, false, false],
    [true, 'true', false],
    [true, 1, false],
    [null, null, true],
    [null, 'null', false],
    [null, 0, false],
    [null, false, false],
    ['', null, false],
    [[1, 2], [1, 2], true],
    [[1, 2], [2, 1], false],
    [[1, 2], [1, 2, 3], false],
    [[1], 1, false],
    [1, [1], false],
    [[], [], true],
    [[], {}, false],
    [{}, [], false],
    [{ a: 1, b: [1, { c: 'd' }] }, { b: [1, { c: 'd' }], a: 1 }, true],
    [{ a: 1, b: [1, { c: 'd' }] }, { a: 1, b: [1, { c: 'e' }] }, false],
    [{ a: 1 }, { a: 1, b: 2 }, false],
    [{ a: 1, b: 2 }, { a: 1 }, false],
    [{ a: 1 }, { a: '1' }, false],
    [{ a: null }, {}, false],
    [{}, {}, true],
    [{ a: 1 }, 'a', false],
    ['[object Object]', { a: 1 }, false],
    [[1, 2], '1,2', false],
    ['1,2', [1, 2], false],
  ]);
});

t.test('!= and not_equals', async (t) => {
  check(t, ['!=', 'not_equals'], [
    ['a', 'a', false],
    ['a', 'b', true],
    [1, 1, false],
    [1, 2, true],
    [1, '1', true],
    ['1', 1, true],
    [true, true, false],
    [true, false, true],
    [true, 'true', true],
    [null, null, false],
    [null, 0, true],
    [[1, 2], [1, 2], false],
    [[1, 2], [2, 1], true],
    [{ a: [1] }, { a: [1] }, false],
    [{ a: [1] }, { a: [2] }, true],
    [{ a: 1 }, 'x', true],
  ]);
});

t.test('contains: substring on strings, membership on lists', async (t) => {
  check(t, ['contains'], [
    ['ell', 'hello', true],
    ['hello', 'hello', true],
    ['', 'hello', true],
    ['xyz', 'hello', false],
    ['Hell', 'hello', false],
    ['hello!', 'hello', false],
    // list membership, by structural equality and JSON type
    ['a', ['a', 'b'], true],
    ['c', ['a', 'b'], false],
    ['a', ['ab', 'ba'], false],
    [1, [1, 2], true],
    [1, ['1', '2'], false],
    ['1', [1, 2], false],
    [null, [null], true],
    [null, [], false],
    [true, [1], false],
    [[1], [[1], [2]], true],
    [[1], [1, 2], false],
    [{ k: 'v' }, [{ k: 'v' }], true],
    [{ k: 'v' }, [{ k: 'w' }], false],
    // a non-string value never is a substring
    [1, '1', false],
    [1, 'a1b', false],
    // other attribute types never contain anything
    [1, 1, false],
    [1, 12, false],
    [true, true, false],
    [null, null, false],
    ['k', { k: 'v' }, false],
    ['v', { k: 'v' }, false],
  ]);
});

t.test('not_contains: the negation on strings and lists only', async (t) => {
  check(t, ['not_contains'], [
    ['ell', 'hello', false],
    ['xyz', 'hello', true],
    ['', 'hello', false],
    ['a', ['a', 'b'], false],
    ['c', ['a', 'b'], true],
    [1, ['1'], true],
    [{ k: 'v' }, [{ k: 'v' }], false],
    [{ k: 'v' }, [{ k: 'w' }], true],
    // neither string nor list: nothing to test, so the condition does not hold
    [1, 1, false],
    ['x', 5, false],
    ['x', true, false],
    ['x', null, false],
    ['x', { y: 1 }, false],
  ]);
});

t.test('startswith and endswith', async (t) => {
  check(t, ['startswith'], [
    ['he', 'hello', true],
    ['hello', 'hello', true],
    ['', 'hello', true],
    ['lo', 'hello', false],
    ['He', 'hello', false],
    ['hello!', 'hello', false],
    ['1', 12, false],
    ['a', ['a', 'b'], false],
    ['t', true, false],
    ['n', null, false],
  ]);
  check(t, ['endswith'], [
    ['lo', 'hello', true],
    ['hello', 'hello', true],
    ['', 'hello', true],
    ['he', 'hello', false],
    ['LO', 'hello', false],
    ['2', 12, false],
    ['b', ['a', 'b'], false],
    ['e', true, false],
  ]);
});

t.test('gt / > reads naturally: attribute > value', async (t) => {
  check(t, ['gt', '>'], [
    [18, 19, true],
    [18, 18, false],
    [18, 17, false],
    [18, 18.5, true],
    [0, -1, false],
    [-1, 0, true],
    [18, '19', false],
    [18, true, false],
    [0, null, false],
    [18, [19], false],
    [18, { v: 19 }, false],
  ]);
});

t.test('gte / >= reads naturally: attribute >= value', async (t) => {
  check(t, ['gte', '>='], [
    [18, 19, true],
    [18, 18, true],
    [18, 17, false],
    [18, 17.999, false],
    [18, '18', false],
    [0, false, false],
    [0, null, false],
  ]);
});

t.test('lt / < reads naturally: attribute < value', async (t) => {
  check(t, ['lt', '<'], [
    [18, 17, true],
    [18, 18, false],
    [18, 19, false],
    [0, -0.5, true],
    [18, '17', false],
    [1, false, false],
    [1, null, false],
  ]);
});

t.test('lte / <= reads naturally: attribute <= value', async (t) => {
  check(t, ['lte', '<='], [
    [18, 17, true],
    [18, 18, true],
    [18, 19, false],
    [18, '18', false],
    [1, true, false],
    [0, null, false],
  ]);
});

t.test('in: the attribute is a member of the condition list', async (t) => {
  check(t, ['in'], [
    [['a', 'b'], 'a', true],
    [['a', 'b'], 'c', false],
    [['a', 'b'], 'A', false],
    [[], 'a', false],
    [[1, 2], 1, true],
    [[1, 2], '1', false],
    [['1', '2'], 1, false],
    [[true], true, true],
    [[true], 1, false],
    [[false], 0, false],
    [[null], null, true],
    [['null'], null, false],
    [[0], null, false],
    // structured members compare structurally
    [[[1, 2], { k: 'v' }], [1, 2], true],
    [[[1, 2], { k: 'v' }], [2, 1], false],
    [[[1, 2], { k: 'v' }], { k: 'v' }, true],
    [[[1, 2], { k: 'v' }], { k: 'w' }, false],
    [['a', { k: 'v' }], 'a', true],
    [['a', { k: 'v' }], 'b', false],
    // a list attribute is not tested element-wise
    [['a', 'b'], ['a'], false],
    [['a', 'b'], ['a', 'b'], false],
  ]);
});

t.test('not_in: the attribute is not a member of the condition list', async (t) => {
  check(t, ['not_in'], [
    [['a', 'b'], 'a', false],
    [['a', 'b'], 'c', true],
    [[], 'a', true],
    [[1, 2], '1', true],
    [[1, 2], 2, false],
    [[null], null, false],
    [[null], false, true],
    [[{ k: 'v' }], { k: 'v' }, false],
    [[{ k: 'v' }], { k: 'w' }, true],
    [['a', 'b'], ['a'], true],
  ]);
});

t.test('a missing attribute satisfies no condition, whatever the operator, but not_exists', async (t) => {
  const values: Record<Operator, unknown> = {
    '==': 'a', equals: 'a',
    '!=': 'a', not_equals: 'a',
    contains: 'a', not_contains: 'a', startswith: 'a', endswith: 'a',
    gt: 1, '>': 1, gte: 1, '>=': 1, lt: 1, '<': 1, lte: 1, '<=': 1,
    in: ['a'], not_in: ['a'],
    exists: undefined, not_exists: undefined,
  };
  for (const operator of OPERATORS) {
    t.equal(holdsWhenMissing(operator, values[operator]), operator === 'not_exists', `missing ${operator} ${JSON.stringify(values[operator])}`);
  }
  // The negative operators in particular, also with values that could never match anything present.
  t.equal(holdsWhenMissing('!=', null), false);
  t.equal(holdsWhenMissing('not_equals', 'anything'), false);
  t.equal(holdsWhenMissing('not_in', []), false);
  t.equal(holdsWhenMissing('not_contains', 'zzz'), false);
  t.equal(holdsWhenMissing('==', null), false, 'missing is not null');
  t.equal(holdsWhenMissing('in', [null]), false, 'missing is not a member of [null]');
});

t.test('an attribute that is present with value null is not missing', async (t) => {
  t.equal(holdsFor('==', null, null), true);
  t.equal(holdsFor('!=', 'a', null), true);
  t.equal(holdsFor('not_in', ['a'], null), true);
  t.equal(holdsFor('in', [null], null), true);
});

t.test('checkValue: which condition values each operator accepts', async (t) => {
  const anything = ['s', 1, true, null, [1], { a: 1 }];
  for (const operator of ['==', 'equals', '!=', 'not_equals', 'contains', 'not_contains'] as const) {
    for (const value of anything) t.equal(OPERATOR_DEFINITIONS[operator].checkValue(value), undefined, `${operator} ${JSON.stringify(value)}`);
  }
  for (const operator of ['gt', '>', 'gte', '>=', 'lt', '<', 'lte', '<='] as const) {
    t.equal(OPERATOR_DEFINITIONS[operator].checkValue(18), undefined);
    t.equal(OPERATOR_DEFINITIONS[operator].checkValue(-1.5), undefined);
    for (const value of ['18', true, null, [18], { v: 18 }]) {
      t.equal(OPERATOR_DEFINITIONS[operator].checkValue(value), 'needs a number value', `${operator} ${JSON.stringify(value)}`);
    }
  }
  for (const operator of ['startswith', 'endswith'] as const) {
    t.equal(OPERATOR_DEFINITIONS[operator].checkValue(''), undefined);
    t.equal(OPERATOR_DEFINITIONS[operator].checkValue('abc'), undefined);
    for (const value of [1, true, null, ['a'], { a: 'b' }]) {
      t.equal(OPERATOR_DEFINITIONS[operator].checkValue(value), 'needs a string value', `${operator} ${JSON.stringify(value)}`);
    }
  }
  for (const operator of ['exists', 'not_exists'] as const) {
    t.equal(OPERATOR_DEFINITIONS[operator].checkValue(undefined), undefined, `${operator} without a value`);
    for (const value of anything) t.equal(OPERATOR_DEFINITIONS[operator].checkValue(value), "takes no value: leave 'value' out", `${operator} ${JSON.stringify(value)}`);
  }
  for (const operator of ['in', 'not_in'] as const) {
    t.equal(OPERATOR_DEFINITIONS[operator].checkValue([]), undefined);
    t.equal(OPERATOR_DEFINITIONS[operator].checkValue(['a', 1]), undefined);
    for (const value of ['a', 1, true, null, { 0: 'a' }]) {
      t.equal(OPERATOR_DEFINITIONS[operator].checkValue(value), 'needs a list value', `${operator} ${JSON.stringify(value)}`);
    }
  }
});

t.test('jsonEqual', async (t) => {
  t.equal(jsonEqual(1, 1), true);
  t.equal(jsonEqual(1, '1'), false);
  t.equal(jsonEqual(null, null), true);
  t.equal(jsonEqual(null, {}), false);
  t.equal(jsonEqual({}, null), false);
  t.equal(jsonEqual([], {}), false);
  t.equal(jsonEqual({}, []), false);
  t.equal(jsonEqual({ 0: 'a' }, ['a']), false);
  t.equal(jsonEqual(['a'], { 0: 'a' }), false);
  t.equal(jsonEqual({ a: [1, { b: null }] }, { a: [1, { b: null }] }), true);
  t.equal(jsonEqual({ a: [1, { b: null }] }, { a: [1, { b: false }] }), false);
  t.equal(jsonEqual({ a: undefined }, { b: undefined }), false, 'same key count, different keys');
  // keys that name Object.prototype members are ordinary own keys
  const left = JSON.parse('{"__proto__": {"x": 1}, "constructor": 2}');
  const same = JSON.parse('{"constructor": 2, "__proto__": {"x": 1}}');
  const different = JSON.parse('{"__proto__": {"x": 2}, "constructor": 2}');
  t.equal(jsonEqual(left, same), true);
  t.equal(jsonEqual(left, different), false);
  t.equal(jsonEqual(JSON.parse('{"toString": 1}'), { valueOf: 1 }), false);
  t.equal(jsonEqual(JSON.parse('{"__proto__": {}}'), {}), false, 'an own __proto__ key is not the prototype');
  t.equal(jsonEqual({}, JSON.parse('{"__proto__": {}}')), false);
});
