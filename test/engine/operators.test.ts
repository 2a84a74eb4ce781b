import t from 'tap';
import fc from 'fast-check';
import { OPERATORS, type Operator } from '../../src/schemas/policy.js';
import { OPERATOR_DEFINITIONS } from '../../src/engine/operators/index.js';
import { jsonEqual } from '../../src/engine/json-equal.js';
import { entity, holds, holdsFor, holdsWhenMissing } from './helpers.js';

/** The one assertion `check` needs, so any tap test object fits. */
interface Asserts {
  equal(found: unknown, wanted: unknown, message: string): unknown;
}

type Case = [conditionValue: unknown, attribute: unknown, expected: boolean];

/**
 * Runs every case through the whole engine (compile + evaluate, an allow rule) and through the bare
 * predicate as an allow rule reads it (a value it cannot evaluate: undefined, which does not hold there).
 */
function check(t: Asserts, operators: Operator[], cases: Case[]): void {
  for (const operator of operators) {
    for (const [value, attribute, expected] of cases) {
      const label = `${JSON.stringify(attribute)} ${operator} ${JSON.stringify(value)}`;
      t.equal(holdsFor(operator, value, attribute), expected, `engine: ${label}`);
      t.equal(OPERATOR_DEFINITIONS[operator].build(value)(attribute) ?? false, expected, `predicate: ${label}`);
    }
  }
}

t.test('every wire operator has a definition', async (t) => {
  t.same(Object.keys(OPERATOR_DEFINITIONS).sort(), [...OPERATORS].sort());
  t.equal(OPERATORS.length, 28);
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
    matches: '', not_matches: 'a', in_cidr: '0.0.0.0/0', not_in_cidr: '10.0.0.0/8',
    before: '2999-01-01T00:00:00Z', after: '1970-01-01T00:00:00Z', during: { zone: 'UTC', days: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
    within: { last: 'P100000D', next: 'P100000D', of: '2026-01-01T00:00:00Z' },
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

t.test('matches: a regular expression (RE2 syntax) found anywhere in a string attribute, as RegExp.test finds it', async (t) => {
  check(t, ['matches'], [
    ['^/projects/[a-z0-9-]+/reports/', '/projects/q3-plan/reports/1', true],
    ['^/projects/[a-z0-9-]+/reports/', '/projects/Q3/reports/1', false],
    ['^/projects/[a-z0-9-]+/reports/', 'x/projects/q3/reports/1', false],
    ['reports', '/projects/q3/reports/1', true],
    ['^a$', 'a', true],
    ['^a$', 'a\n', false],
    ['^(a|aa)+$', `${'a'.repeat(40)}b`, false],
    ['^1$', 1, false],
    ['.*', null, false],
    ['.*', ['a'], false],
  ]);
  check(t, ['not_matches'], [
    ['^tmp-', 'tmp-1', false],
    ['^tmp-', 'data-1', true],
    ['^tmp-', 7, false],
    ['^tmp-', ['data'], false],
  ]);
});

t.test('matches refuses what the linear-time engine does not take, too long a pattern, and value_from', async (t) => {
  t.equal(OPERATOR_DEFINITIONS.matches.checkValue('^[a-z]+$'), undefined);
  t.match(OPERATOR_DEFINITIONS.matches.checkValue('(a)\\1'), /needs a regular expression: .*RE2 syntax/, 'a backreference');
  t.match(OPERATOR_DEFINITIONS.matches.checkValue('(?=a)'), /needs a regular expression/, 'lookahead');
  t.match(OPERATOR_DEFINITIONS.not_matches.checkValue('['), /needs a regular expression/);
  t.match(OPERATOR_DEFINITIONS.matches.checkValue('a'.repeat(1001)), /longer than 1000 characters/);
  t.equal(OPERATOR_DEFINITIONS.matches.checkValue(3), 'needs a string value: a regular expression');
  t.type(OPERATOR_DEFINITIONS.matches.refusesValueFrom, 'string');
  t.equal(OPERATOR_DEFINITIONS.in_cidr.refusesValueFrom, undefined);
});

t.test('in_cidr: an IPv4 or IPv6 address in a range, or in any range of a list', async (t) => {
  check(t, ['in_cidr'], [
    ['10.16.0.0/12', '10.16.0.1', true],
    ['10.16.0.0/12', '10.31.255.255', true],
    ['10.16.0.0/12', '10.32.0.0', false],
    ['10.16.0.0/12', '10.15.255.255', false],
    ['10.1.0.0/16', '10.10.0.1', false],
    ['0.0.0.0/0', '203.0.113.9', true],
    ['0.0.0.0/0', '2001:db8::1', false],
    ['192.0.2.7', '192.0.2.7', true],
    ['192.0.2.7/32', '192.0.2.8', false],
    ['2001:db8::/32', '2001:db8:ffff::1', true],
    ['2001:db8::/32', '2001:db9::1', false],
    ['2001:DB8::/32', '2001:db8::1', true],
    ['::/0', '10.0.0.1', false],
    ['::/0', '::1', true],
    ['fe80::/10', 'fe80::1', true],
    ['fe80::/10', 'fe80::1%eth0', false],
    // An IPv4-mapped IPv6 address is the IPv4 address it maps.
    ['10.0.0.0/8', '::ffff:10.1.2.3', true],
    ['::ffff:0:0/96', '10.1.2.3', true],
    [['192.0.2.0/24', '2001:db8::/32'], '2001:db8::5', true],
    [['192.0.2.0/24', '2001:db8::/32'], '198.51.100.1', false],
    ['10.0.0.0/8', '10.1.2', false],
    ['10.0.0.0/8', '010.1.2.3', false],
    ['10.0.0.0/8', '10.1.2.256', false],
    ['10.0.0.0/8', ' 10.1.2.3', false],
    ['10.0.0.0/8', 167837953, false],
    ['10.0.0.0/8', null, false],
    ['10.0.0.0/8', ['10.1.2.3'], false],
  ]);
  check(t, ['not_in_cidr'], [
    ['10.0.0.0/8', '10.1.2.3', false],
    ['10.0.0.0/8', '192.0.2.1', true],
    ['10.0.0.0/8', '2001:db8::1', true],
    // Only an address is outside a range: anything else holds for neither operator.
    ['10.0.0.0/8', 'laptop', false],
    ['10.0.0.0/8', 42, false],
  ]);
});

t.test('in_cidr takes a range or a list of up to 256, each an address with an optional prefix of its family', async (t) => {
  for (const value of ['10.0.0.0/8', '2001:db8::/32', '192.0.2.1', ['10.0.0.0/8', '::1'], Array(256).fill('10.0.0.0/8')]) {
    t.equal(OPERATOR_DEFINITIONS.in_cidr.checkValue(value), undefined, JSON.stringify(value).slice(0, 40));
  }
  const refused: [unknown, RegExp][] = [
    ['10.0.0.0/33', /prefix length that is not 0 to 32/],
    ['2001:db8::/129', /prefix length that is not 0 to 128/],
    ['10.0.0/8', /not an IPv4 or IPv6 address/],
    ['10.0.0.0/', /prefix length/],
    ['10.0.0.0/08', /prefix length/],
    ['office', /not an IPv4 or IPv6 address/],
    [[], /at least one/],
    [Array(257).fill('10.0.0.0/8'), /at most 256/],
    [8, /needs a CIDR range/],
    [['10.0.0.0/8', 8], /needs a CIDR range/],
  ];
  for (const [value, message] of refused) t.match(OPERATOR_DEFINITIONS.not_in_cidr.checkValue(value), message, JSON.stringify(value).slice(0, 40));
});

t.test('in_cidr with value_from: the ranges read from the check; ranges that are not ranges cannot be evaluated (undefined), for either operator', async (t) => {
  const { relate } = OPERATOR_DEFINITIONS.in_cidr;
  t.equal(relate('10.1.2.3', '10.0.0.0/8'), true);
  t.equal(relate('10.1.2.3', ['192.0.2.0/24', '10.0.0.0/8']), true);
  t.equal(relate('10.1.2.3', 'office'), undefined);
  t.equal(relate('10.1.2.3', Array(257).fill('10.0.0.0/8')), undefined, 'beyond the bound: no range is read');
  t.equal(OPERATOR_DEFINITIONS.not_in_cidr.relate('10.1.2.3', 'office'), undefined);
  t.equal(OPERATOR_DEFINITIONS.not_in_cidr.relate('192.0.2.1', '10.0.0.0/8'), true);
  t.equal(OPERATOR_DEFINITIONS.not_in_cidr.relate('office', '10.0.0.0/8'), undefined);
});

t.test('in_cidr reads addresses as people write them, and only those: anything else cannot be evaluated (undefined)', async (t) => {
  const anyV6 = OPERATOR_DEFINITIONS.in_cidr.build('::/0');
  const anyV4 = OPERATOR_DEFINITIONS.in_cidr.build('0.0.0.0/0');
  for (const address of ['::', '::1', '1::', '1:2:3:4:5:6:7:8', '1::8', '1:2:3:4:5:6::', 'ABCD:ef01::', '1:2:3:4:5:6:1.2.3.4', '::1.2.3.4']) t.equal(anyV6(address), true, address);
  for (const address of ['0.0.0.0', '255.255.255.255', '::ffff:1.2.3.4', '::FFFF:102:304']) t.equal(anyV4(address), true, address);
  for (const address of ['', ':', ':::', '1:2:3:4:5:6:7:8:9', '1::2::3', ':1', '1:', '1:2:3:4:5:6:7', '12345::', '1:2:3:4:5:6:7:1.2.3.4', '::1.2.3', 'g::', '1.2.3.4.5', '1..2.3', '256.1.1.1', '1.2.3.4 ', '::1%lo']) {
    t.same([anyV6(address), anyV4(address)], [undefined, undefined], JSON.stringify(address));
  }
});

t.test('in_cidr agrees with arithmetic on 128-bit numbers, for any address written any way and any prefix', async (t) => {
  const hex = (groups: number[]) => groups.map((group) => group.toString(16));
  /** The address in full, compressed at its longest run of zero groups, and in capitals. */
  const spellings = (groups: number[]) => {
    const full = hex(groups).join(':');
    let [start, length] = [-1, 0];
    for (let index = 0; index < 8; index++) {
      let run = 0;
      while (index + run < 8 && groups[index + run] === 0) run++;
      if (run > length) [start, length] = [index, run];
    }
    const compressed = length < 2 ? full : `${hex(groups.slice(0, start)).join(':')}::${hex(groups.slice(start + length)).join(':')}`;
    return [full, compressed, compressed.toUpperCase()];
  };
  const number = (groups: number[]) => groups.reduce((value, group) => (value << 16n) | BigInt(group), 0n);
  const group = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff }));
  const v6 = fc.array(group, { minLength: 8, maxLength: 8 }).filter((groups) => !(groups.slice(0, 5).every((each) => each === 0) && groups[5] === 0xffff));
  fc.assert(
    fc.property(v6, v6, fc.integer({ min: 0, max: 128 }), (address, network, prefix) => {
      const range = `${spellings(network)[1]}/${prefix}`;
      const shift = BigInt(128 - prefix);
      const expected = number(address) >> shift === number(network) >> shift;
      for (const written of spellings(address)) {
        if (OPERATOR_DEFINITIONS.in_cidr.build(range)(written) !== expected) throw new Error(`${written} in ${range}: expected ${expected}`);
        if (OPERATOR_DEFINITIONS.not_in_cidr.build(range)(written) !== !expected) throw new Error(`${written} not in ${range}: expected ${!expected}`);
      }
    }),
    { numRuns: 2000 },
  );
  const octets = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 });
  fc.assert(
    fc.property(octets, octets, fc.integer({ min: 0, max: 32 }), (address, network, prefix) => {
      const value = (parts: number[]) => parts.reduce((sum, part) => sum * 256 + part, 0);
      const expected = Math.floor(value(address) / 2 ** (32 - prefix)) === Math.floor(value(network) / 2 ** (32 - prefix));
      const range = `${network.join('.')}/${prefix}`;
      for (const written of [address.join('.'), `::ffff:${address.join('.')}`]) {
        if (OPERATOR_DEFINITIONS.in_cidr.build(range)(written) !== expected) throw new Error(`${written} in ${range}: expected ${expected}`);
      }
    }),
    { numRuns: 2000 },
  );
  t.pass('4,000 cases');
});

t.test('before and after compare the instants RFC 3339 date-times name, whatever their offsets', async (t) => {
  check(t, ['before'], [
    ['2026-12-31T00:00:00Z', '2026-12-30T23:59:59.999Z', true],
    ['2026-12-31T00:00:00Z', '2026-12-31T00:00:00Z', false],
    ['2026-12-31T00:00:00Z', '2026-12-31T00:30:00+01:00', true],
    ['2026-12-31T00:00:00Z', '2026-12-30T23:30:00-01:00', false],
    ['2026-12-31T00:00:00Z', '2026-12-30', false],
    ['2026-12-31T00:00:00Z', '2026-12-30T10:00:00', false],
    ['2026-12-31T00:00:00Z', 'yesterday', false],
    ['2026-12-31T00:00:00Z', 1798675200000, false],
    ['2026-12-31T00:00:00Z', null, false],
  ]);
  check(t, ['after'], [
    ['2026-12-31T00:00:00Z', '2026-12-31T00:00:00.001Z', true],
    ['2026-12-31T00:00:00Z', '2026-12-31t01:00:00+01:00', false],
    ['2026-12-31T00:00:00Z', '2026-12-31T01:00:01+01:00', true],
  ]);
  for (const value of ['2026-12-31', '2026-12-31T00:00:00', 'tomorrow', 0, null, '2026-02-30T00:00:00Z']) {
    t.match(OPERATOR_DEFINITIONS.before.checkValue(value), /needs a date-time value, RFC 3339/, JSON.stringify(value));
  }
  t.equal(OPERATOR_DEFINITIONS.after.relate('2026-12-31T00:00:01Z', '2026-12-31T00:00:00Z'), true, 'value_from: the other date-time read from the check');
  t.equal(OPERATOR_DEFINITIONS.after.relate('2026-12-31T00:00:01Z', 'soon'), undefined, 'a value read that is not a date-time cannot be evaluated');
  t.equal(OPERATOR_DEFINITIONS.after.build('2026-12-31T00:00:00Z')('2026-12-30'), undefined, 'nor can an attribute that is not one');
});

t.test('during: weekdays and a time of day in a named zone, daylight saving time included', async (t) => {
  const office = { zone: 'Europe/Berlin', days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '09:00', to: '18:00' };
  check(t, ['during'], [
    // Friday 27 November 2026: Berlin is UTC+1.
    [office, '2026-11-27T08:00:00Z', true],
    [office, '2026-11-27T07:59:59Z', false],
    [office, '2026-11-27T16:59:59Z', true],
    [office, '2026-11-27T17:00:00Z', false],
    // Saturday.
    [office, '2026-11-28T10:00:00Z', false],
    // Summer time: UTC+2.
    [office, '2026-07-01T07:00:00Z', true],
    [office, '2026-07-01T06:59:00Z', false],
    [office, '2026-07-01T12:00:00+05:00', true],
    // Across midnight, and days alone.
    [{ zone: 'UTC', from: '22:00', to: '06:00' }, '2026-11-27T23:30:00Z', true],
    [{ zone: 'UTC', from: '22:00', to: '06:00' }, '2026-11-27T05:59:00Z', true],
    [{ zone: 'UTC', from: '22:00', to: '06:00' }, '2026-11-27T12:00:00Z', false],
    [{ zone: 'America/New_York', days: ['sat', 'sun'] }, '2026-11-28T03:00:00Z', false],
    [{ zone: 'America/New_York', days: ['sat', 'sun'] }, '2026-11-28T06:00:00Z', true],
    [office, 'Friday', false],
    [office, null, false],
  ]);
  const refused: [unknown, RegExp][] = [
    ['09:00-18:00', /needs a window/],
    [{ days: ['mon'] }, /needs a window with a zone/],
    [{ zone: 'Mars/Olympus', days: ['mon'] }, /time zone the server knows/],
    [{ zone: 'UTC', days: ['monday'] }, /takes days as a list of sun, mon/],
    [{ zone: 'UTC', days: [] }, /takes days as a list/],
    [{ zone: 'UTC', from: '9:00', to: '18:00' }, /HH:MM/],
    [{ zone: 'UTC', from: '09:00' }, /'from' and 'to' together/],
    [{ zone: 'UTC' }, /needs 'days', or 'from' and 'to'/],
    [{ zone: 'UTC', days: ['mon'], hours: 3 }, /not 'hours'/],
  ];
  for (const [value, message] of refused) t.match(OPERATOR_DEFINITIONS.during.checkValue(value), message, JSON.stringify(value));
  t.type(OPERATOR_DEFINITIONS.during.refusesValueFrom, 'string');
});

t.test('within: a date-time from `last` before the anchor to `next` after it, both ends included', async (t) => {
  const anchor = '2026-12-31T00:00:00Z';
  check(t, ['within'], [
    [{ last: 'PT15M', of: anchor }, '2026-12-30T23:45:00Z', true],
    [{ last: 'PT15M', of: anchor }, '2026-12-30T23:44:59.999Z', false],
    [{ last: 'PT15M', of: anchor }, anchor, true],
    [{ last: 'PT15M', of: anchor }, '2026-12-31T00:00:00.001Z', false],
    [{ next: 'P7D', of: anchor }, '2027-01-07T00:00:00Z', true],
    [{ next: 'P7D', of: anchor }, '2027-01-07T01:00:01+01:00', false],
    [{ next: 'P7D', of: anchor }, '2026-12-30T23:59:59Z', false],
    [{ last: 'P1W', next: 'PT1H', of: anchor }, '2026-12-24T00:00:00Z', true],
    [{ last: 'P1W', next: 'PT1H', of: anchor }, '2026-12-31T00:30:00-00:30', true],
    [{ last: 'P1DT12H', of: anchor }, '2026-12-29T12:00:00Z', true],
    [{ last: 'P1DT12H', of: anchor }, '2026-12-29T11:59:59Z', false],
    [{ last: 'PT90S', of: anchor }, '2026-12-30T23:58:30Z', true],
    [{ last: 'PT15M', of: anchor }, '2026-12-30', false],
    [{ last: 'PT15M', of: anchor }, 1798675200000, false],
    [{ last: 'PT15M', of: anchor }, null, false],
  ]);
  const refused: [unknown, RegExp][] = [
    ['PT15M', /needs a span such as/],
    [{}, /needs 'last' or 'next'/],
    [{ of: anchor }, /needs 'last' or 'next'/],
    [{ last: '15m' }, /takes 'last' as an ISO 8601 duration/],
    [{ next: 'P1M' }, /takes 'next' as an ISO 8601 duration/],
    [{ last: 'P1Y' }, /ISO 8601 duration/],
    [{ last: 'P' }, /ISO 8601 duration/],
    [{ last: 'PT' }, /ISO 8601 duration/],
    [{ last: 'P1DT' }, /ISO 8601 duration/],
    [{ last: 'PT1.5H' }, /ISO 8601 duration/],
    [{ last: 'P-1D' }, /ISO 8601 duration/],
    [{ last: 'P100001D' }, /at most 100000 days/],
    [{ last: 'PT99999999H' }, /at most 100000 days/],
    [{ last: 15 }, /ISO 8601 duration/],
    [{ last: 'PT1M', of: 'now' }, /takes 'of' as a date-time/],
    [{ last: 'PT1M', around: 'PT1M' }, /not 'around'/],
  ];
  for (const [value, message] of refused) t.match(OPERATOR_DEFINITIONS.within.checkValue(value), message, JSON.stringify(value));
  t.equal(OPERATOR_DEFINITIONS.within.checkValue({ last: 'P100000D', next: 'PT0S' }), undefined, 'the longest span, and an empty side');
});

t.test('within reads its anchor from value_from, or from the decision time, when its value has none', async (t) => {
  const anchored = OPERATOR_DEFINITIONS.within.anchored!;
  t.equal(anchored.defaultReference({ last: 'PT1M' }), 'context.time');
  t.equal(anchored.defaultReference({ last: 'PT1M', of: '2026-12-31T00:00:00Z' }), undefined, 'an anchor written in the value needs no reference');
  const lastMinute = anchored.relation({ last: 'PT1M' });
  t.equal(lastMinute('2026-12-30T23:59:30Z', '2026-12-31T00:00:00Z'), true);
  t.equal(lastMinute('2026-12-30T23:58:30Z', '2026-12-31T00:00:00Z'), false);
  t.equal(lastMinute('2026-12-30T23:59:30Z', 'soon'), undefined, 'an anchor that is not a date-time cannot be evaluated');
  t.same(anchored.pin({ last: 'PT1M' }, '2026-12-31T00:00:00Z'), { last: 'PT1M', of: '2026-12-31T00:00:00Z' });
  t.same(anchored.mirror({ last: 'PT1M' }), { next: 'PT1M' });
  t.same(anchored.mirror({ last: 'PT1M', next: 'P2D' }), { last: 'P2D', next: 'PT1M' });
  // Mirrored, the anchor and the tested value swap places and the condition says the same of both.
  const spans = fc.record({ last: fc.option(fc.integer({ min: 0, max: 600 }), { nil: undefined }), next: fc.option(fc.integer({ min: 0, max: 600 }), { nil: undefined }) }).filter(({ last, next }) => last !== undefined || next !== undefined);
  const instant = fc.integer({ min: 0, max: 2_000 }).map((seconds) => new Date(Date.UTC(2026, 0, 1) + seconds * 1000).toISOString());
  fc.assert(
    fc.property(spans, instant, instant, ({ last, next }, a, b) => {
      const span = { ...(last !== undefined && { last: `PT${last}S` }), ...(next !== undefined && { next: `PT${next}S` }) };
      return anchored.relation(span)(a, b) === anchored.relation(anchored.mirror(span))(b, a);
    }),
    { numRuns: 500 },
  );
});

t.test('date-times are read as Date.parse reads RFC 3339, and only real calendar days', async (t) => {
  const pad = (value: number, length = 2) => String(value).padStart(length, '0');
  const written = fc.record({
    year: fc.integer({ min: 1000, max: 9999 }),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.integer({ min: 1, max: 31 }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.integer({ min: 0, max: 59 }),
    fraction: fc.option(fc.stringMatching(/^[0-9]{1,9}$/), { nil: undefined }),
    zone: fc.oneof(fc.constantFrom('Z', 'z'), fc.tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(([sign, hours, minutes]) => `${sign}${pad(hours)}:${pad(minutes)}`)),
  });
  fc.assert(
    fc.property(written, ({ year, month, day, hour, minute, second, fraction, zone }) => {
      const text = `${pad(year, 4)}-${pad(month)}-${pad(day)}T${pad(hour)}:${pad(minute)}:${pad(second)}${fraction === undefined ? '' : `.${fraction}`}${zone}`;
      const realDay = day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
      const expected = realDay ? Date.parse(text.replace('z', 'Z').replace(/\.(\d{1,3})\d*/, '.$1')) : undefined;
      const read = OPERATOR_DEFINITIONS.before.checkValue(text) === undefined ? OPERATOR_DEFINITIONS.before.build(text) : undefined;
      if ((read === undefined) !== (expected === undefined)) throw new Error(`${text}: read ${read !== undefined}, expected ${expected}`);
      if (read !== undefined) {
        const justBefore = new Date(expected! - 1).toISOString();
        if (!read(justBefore) || read(new Date(expected!).toISOString())) throw new Error(`${text} is not the instant ${new Date(expected!).toISOString()}`);
      }
    }),
    { numRuns: 3000 },
  );
  t.pass('3,000 date-times');
});
