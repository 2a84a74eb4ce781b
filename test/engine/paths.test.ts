import t from 'tap';
import { compileLookup, MISSING, parsePath } from '../../src/engine/paths.js';
import { cond, entity, holds } from './helpers.js';
import type { ResolvedEntity } from '../../src/engine/index.js';

const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'prototype', 'valueOf'];

t.test('parsePath accepts uri and dotted attribute paths', async (t) => {
  t.same(parsePath('uri'), { kind: 'uri' });
  t.same(parsePath('attributes.x'), { kind: 'attribute', steps: ['x'] });
  t.same(parsePath('attributes.address.city'), { kind: 'attribute', steps: ['address', 'city'] });
  t.same(parsePath('attributes.tags.0'), { kind: 'attribute', steps: ['tags', '0'] });
  t.same(parsePath('attributes.__proto__.x'), { kind: 'attribute', steps: ['__proto__', 'x'] });
  t.same(parsePath('attributes.uri'), { kind: 'attribute', steps: ['uri'] });
  t.same(parsePath('attributes.attributes'), { kind: 'attribute', steps: ['attributes'] });
  t.same(parsePath('attributes.a b'), { kind: 'attribute', steps: ['a b'] });
});

t.test('parsePath rejects everything else', async (t) => {
  const wrongRoot = "path must be 'uri' or 'attributes.<key>' (dotted, e.g. 'attributes.address.city')";
  for (const path of ['', 'x', 'attributes', 'Attributes.x', 'attribute.x', 'uri.x', 'URI', 'principal.attributes.x', '.attributes.x', 'x.attributes']) {
    t.same(parsePath(path), { error: wrongRoot }, JSON.stringify(path));
  }
  for (const path of ['attributes.', 'attributes..x', 'attributes.x.', 'attributes.x..y']) {
    t.same(parsePath(path), { error: 'path has an empty segment' }, JSON.stringify(path));
  }
});

t.test('compileLookup throws on an invalid path', async (t) => {
  t.throws(() => compileLookup('attributes'), { message: /invalid path 'attributes'/ });
  t.throws(() => compileLookup('attributes..x'), { message: /empty segment/ });
});

t.test('uri', async (t) => {
  const lookup = compileLookup('uri');
  t.equal(lookup(entity({}, 'user:1')), 'user:1');
  t.equal(lookup(entity({ uri: 'other' })), MISSING, 'no uri: missing, the attribute named uri is not the uri');
  t.equal(holds(cond('==', 'user:1', 'uri'), entity({}, 'user:1')), true);
  t.equal(holds(cond('==', 'user:1', 'uri'), entity({}, 'user:2')), false);
  t.equal(holds(cond('startswith', 'user:', 'uri'), entity({}, 'user:2')), true);
  t.equal(holds(cond('!=', 'user:1', 'uri'), entity({})), false, 'no uri satisfies no condition');
  t.equal(holds(cond('not_in', ['user:1'], 'uri'), entity({ x: 1 })), false);
  t.equal(holds(cond('!=', 'user:1', 'uri'), entity({}, 'user:2')), true);
});

t.test('attributes.<key>', async (t) => {
  const lookup = compileLookup('attributes.department');
  t.equal(lookup(entity({ department: 'sales' })), 'sales');
  t.equal(lookup(entity({ other: 'sales' })), MISSING);
  t.equal(lookup(entity({ department: null })), null, 'present null is a value');
  t.equal(lookup(entity({}, 'department')), MISSING);
  t.equal(holds(cond('==', 'sales', 'attributes.department'), entity({ department: 'sales' })), true);
  t.equal(holds(cond('==', 'sales', 'attributes.department'), entity({ department: 'it' })), false);
  t.equal(lookup(entity({ Department: 'sales' })), MISSING, 'keys are case-sensitive');
});

t.test('nested objects: attributes.address.city', async (t) => {
  const lookup = compileLookup('attributes.address.city');
  const address = JSON.parse('{"city": "Paris", "zip": "75001", "geo": {"lat": 48.8}}');
  t.equal(lookup(entity({ address })), 'Paris');
  t.equal(compileLookup('attributes.address.geo.lat')(entity({ address })), 48.8);
  t.same(compileLookup('attributes.address.geo')(entity({ address })), { lat: 48.8 });
  t.equal(compileLookup('attributes.address.country')(entity({ address })), MISSING);
  t.equal(compileLookup('attributes.address.city.name')(entity({ address })), MISSING, 'cannot step into a string');
  t.equal(compileLookup('attributes.address.city.0')(entity({ address })), MISSING, 'a string is not a list');
  t.equal(compileLookup('attributes.address.city.length')(entity({ address })), MISSING, 'no string properties');
  t.equal(lookup(entity({ address: 'Paris' })), MISSING);
  t.equal(lookup(entity({ address: null })), MISSING);
  t.equal(lookup(entity({ address: 5 })), MISSING);
  t.equal(lookup(entity({ address: true })), MISSING);
  t.equal(lookup(entity({})), MISSING);
  t.equal(lookup(entity({ 'address.city': 'Lyon' })), MISSING, 'a dotted key is not a nested path');
  t.equal(lookup(entity({ address: JSON.parse('{"city": null}') })), null);
  t.equal(holds(cond('==', 'Paris', 'attributes.address.city'), entity({ address })), true);
  t.equal(holds(cond('==', 'Lyon', 'attributes.address.city'), entity({ address })), false);
  t.equal(holds(cond('!=', 'Lyon', 'attributes.address.country'), entity({ address })), false, 'missing nested key');
  t.equal(holds(cond('gt', 48, 'attributes.address.geo.lat'), entity({ address })), true);
});

t.test('lists: attributes.tags.<index>', async (t) => {
  const tags = ['red', 'green', { name: 'blue', codes: [1, 2] }];
  const at = (path: string) => compileLookup(path)(entity({ tags }));
  t.equal(at('attributes.tags.0'), 'red');
  t.equal(at('attributes.tags.1'), 'green');
  t.same(at('attributes.tags.2'), { name: 'blue', codes: [1, 2] });
  t.equal(at('attributes.tags.2.name'), 'blue');
  t.equal(at('attributes.tags.2.codes.1'), 2);
  t.equal(at('attributes.tags.2.codes.2'), MISSING);
  t.equal(at('attributes.tags.3'), MISSING, 'out of range');
  t.equal(at('attributes.tags.100'), MISSING, 'far out of range');
  t.equal(at('attributes.tags.-1'), MISSING, 'negative index');
  t.equal(at('attributes.tags.01'), MISSING, 'non-canonical index');
  t.equal(at('attributes.tags.00'), MISSING, 'non-canonical zero');
  t.equal(at('attributes.tags.+1'), MISSING);
  t.equal(at('attributes.tags.1e0'), MISSING);
  t.equal(at('attributes.tags.0x1'), MISSING);
  t.equal(at('attributes.tags. 1'), MISSING);
  t.equal(at('attributes.tags.1 '), MISSING);
  t.equal(at('attributes.tags.length'), MISSING, 'no list properties');
  t.equal(at('attributes.tags.name'), MISSING);
  t.equal(at('attributes.tags.constructor'), MISSING);
  t.equal(compileLookup('attributes.tags.0')(entity({ tags: [] })), MISSING);
  t.equal(compileLookup('attributes.tags.0')(entity({ tags: [null] })), null);
  t.equal(compileLookup('attributes.tags.0')(entity({ tags: JSON.parse('{"0": "zero"}') })), 'zero', 'an object key "0"');
  t.equal(holds(cond('==', 'red', 'attributes.tags.0'), entity({ tags })), true);
  t.equal(holds(cond('==', 'green', 'attributes.tags.0'), entity({ tags })), false);
  t.equal(holds(cond('==', 'green', 'attributes.tags.01'), entity({ tags })), false);
  t.equal(holds(cond('!=', 'x', 'attributes.tags.5'), entity({ tags })), false, 'out of range satisfies nothing');
  t.equal(holds(cond('not_in', ['x'], 'attributes.tags.01'), entity({ tags })), false, 'non-canonical satisfies nothing');
  t.equal(holds(cond('!=', 'x', 'attributes.tags.1'), entity({ tags })), true);
});

t.test('an index into a large list', async (t) => {
  const tags = Array.from({ length: 12 }, (_, i) => `t${i}`);
  t.equal(compileLookup('attributes.tags.10')(entity({ tags })), 't10');
  t.equal(compileLookup('attributes.tags.11')(entity({ tags })), 't11');
  t.equal(compileLookup('attributes.tags.12')(entity({ tags })), MISSING);
});

t.test('prototype-named attribute keys are ordinary keys', async (t) => {
  for (const key of PROTOTYPE_KEYS) {
    const lookup = compileLookup(`attributes.${key}`);
    const present: ResolvedEntity = entity([[key, 'v']]);
    const absent: ResolvedEntity = entity({ other: 'v' });
    t.equal(lookup(present), 'v', `${key} present`);
    t.equal(lookup(absent), MISSING, `${key} absent`);
    t.equal(holds(cond('==', 'v', `attributes.${key}`), present), true, `${key} == matches its value`);
    t.equal(holds(cond('==', 'w', `attributes.${key}`), present), false, `${key} == other value`);
    t.equal(holds(cond('!=', 'v', `attributes.${key}`), absent), false, `${key} absent != `);
    t.equal(holds(cond('not_in', [], `attributes.${key}`), absent), false, `${key} absent not_in []`);
    t.equal(holds(cond('not_contains', 'x', `attributes.${key}`), absent), false, `${key} absent not_contains`);
    t.equal(holds(cond('!=', 'w', `attributes.${key}`), present), true, `${key} present != other`);
  }
});

t.test('prototype-named keys as nested path parts', async (t) => {
  for (const key of PROTOTYPE_KEYS) {
    const nestedPresent = JSON.parse(`{"${key}": {"${key}": "deep"}, "flat": 1}`);
    t.ok(Object.hasOwn(nestedPresent, key), `${key} is an own key of the parsed object`);
    const present = entity({ obj: nestedPresent });
    const absent = entity({ obj: JSON.parse('{"flat": 1}') });
    const one = compileLookup(`attributes.obj.${key}`);
    const two = compileLookup(`attributes.obj.${key}.${key}`);
    t.same(one(present), { [key]: 'deep' }, `obj.${key} present`);
    t.equal(two(present), 'deep', `obj.${key}.${key} present`);
    t.equal(one(absent), MISSING, `obj.${key} absent is missing, not a prototype member`);
    t.equal(two(absent), MISSING, `obj.${key}.${key} absent`);
    t.equal(compileLookup(`attributes.list.${key}`)(entity({ list: [1, 2] })), MISSING, `list.${key}`);
    t.equal(compileLookup(`attributes.s.${key}`)(entity({ s: 'str' })), MISSING, `string.${key}`);
    t.equal(compileLookup(`attributes.n.${key}`)(entity({ n: 5 })), MISSING, `number.${key}`);
    t.equal(holds(cond('==', 'deep', `attributes.obj.${key}.${key}`), present), true);
    t.equal(holds(cond('!=', 'deep', `attributes.obj.${key}`), absent), false, `absent obj.${key} != `);
    t.equal(holds(cond('not_in', ['x'], `attributes.obj.${key}`), absent), false);
    // The prototype member itself must never be reached, even as an operand of !=.
    t.equal(holds(cond('!=', null, `attributes.obj.${key}.${key}`), absent), false);
  }
  // An own __proto__ key through a Map key with the same name.
  const both = entity([['__proto__', JSON.parse('{"__proto__": {"x": [10, 20]}}')]]);
  t.equal(compileLookup('attributes.__proto__.__proto__.x.1')(both), 20);
  t.equal(compileLookup('attributes.__proto__.__proto__.x.2')(both), MISSING);
  // A nested object created normally has no own __proto__ key.
  t.equal(compileLookup('attributes.obj.__proto__')(entity({ obj: { a: 1 } })), MISSING);
  t.equal(compileLookup('attributes.obj.constructor')(entity({ obj: { a: 1 } })), MISSING);
});

t.test('whole-value comparisons through a path', async (t) => {
  const address = JSON.parse('{"city": "Paris", "zip": "75001"}');
  t.equal(holds(cond('==', { zip: '75001', city: 'Paris' }, 'attributes.address'), entity({ address })), true);
  t.equal(holds(cond('==', { city: 'Paris' }, 'attributes.address'), entity({ address })), false);
  t.equal(holds(cond('contains', 'green', 'attributes.tags'), entity({ tags: ['red', 'green'] })), true);
  t.equal(holds(cond('contains', 'gre', 'attributes.tags'), entity({ tags: ['red', 'green'] })), false);
  t.equal(holds(cond('contains', 'gre', 'attributes.tags.1'), entity({ tags: ['red', 'green'] })), true);
});
