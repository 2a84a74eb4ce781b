import t from 'tap';
import fc from 'fast-check';
import { isValidCheckList } from '../../src/requests/check-shape.js';
import { compileBulkValidator, readBulkBody } from '../../src/requests/bulk-request.js';
import { requestLimitIssues, type RequestLimits } from '../../src/requests/request-limits.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';

// The hand check lets a bulk skip Ajv and the limits walk: it must say "valid" exactly when they
// would both accept the body, or a 422 could be lost (or its details change). Compared with them on
// generated bodies, mostly near-valid ones with one thing wrong. CHECK_SHAPE_RUNS sets the count.

const RUNS = Number(process.env.CHECK_SHAPE_RUNS ?? 3000);
const validate = compileBulkValidator();

const word = fc.oneof(fc.constantFrom('a', 'role', 'id', 'reader', '', '__proto__', 'x'.repeat(17)), fc.string({ maxLength: 20 }));
const value = fc.oneof(fc.constantFrom(1, 'it', true, null, 'y'.repeat(17)), fc.jsonValue({ maxDepth: 4 }));
const attributeItem = fc.oneof(
  fc.record({ key: word, value }),
  fc.record({ key: fc.oneof(word, value), value: fc.option(value, { nil: undefined }), extra: value }, { requiredKeys: [] }),
  value,
);
const attributes = fc.oneof(
  fc.dictionary(word, value, { maxKeys: 3 }),
  fc.array(attributeItem, { maxLength: 3 }),
  fc.constantFrom(null, 'text', 3),
);
const nullableText = fc.oneof(word, fc.constant(null), value);
const entity = fc.oneof(
  fc.record({ uri: nullableText, attributes, type: fc.constantFrom('principal', 'resource', null, 'x'), other: value }, { requiredKeys: [] }),
  fc.constantFrom(null, [], 'user:1'),
);
const check = fc.oneof(
  fc.record(
    {
      principal: entity,
      resource: entity,
      action: nullableText,
      principal_uri: nullableText,
      principal_attributes: attributes,
      resource_uri: nullableText,
      resource_attributes: attributes,
      other: value,
    },
    { requiredKeys: [] },
  ),
  value,
);
const limits: fc.Arbitrary<RequestLimits> = fc.record({ maxJsonDepth: fc.integer({ min: 1, max: 7 }), maxStringLength: fc.integer({ min: 8, max: 24 }) });

/** What Ajv and the limits walk say, the way readBulkBody asks them. */
const acceptedBySchemaAndLimits = (list: unknown[], bounds: RequestLimits) =>
  requestLimitIssues(list, bounds, Number.MAX_SAFE_INTEGER).length === 0 && validate(list);

t.test('the hand check accepts a list exactly when Ajv and the limits walk both do', async (t) => {
  fc.assert(
    fc.property(fc.array(check, { minLength: 1, maxLength: 3 }), limits, (list, bounds) => {
      // Through JSON, as bodies arrive: undefined fields vanish, keys such as __proto__ stay own keys.
      const parsed = JSON.parse(JSON.stringify(list)) as unknown[];
      return isValidCheckList(parsed, bounds) === acceptedBySchemaAndLimits(parsed, bounds);
    }),
    { numRuns: RUNS },
  );
  t.pass(`${RUNS} generated lists`);
});

t.test('the hand check accepts the common bodies, so they skip Ajv', async (t) => {
  const bodies = [
    [{ principal: { attributes: { role: 'reader' } }, resource: { attributes: { id: 'doc-1', tags: ['a', { b: [1] }] } }, action: 'read' }],
    [{ principal: { uri: 'user:1', type: 'principal' }, resource: { uri: 'doc:1', attributes: [{ key: 'kind', value: 'report' }] } }],
    [{ principal_uri: 'user:1', principal_attributes: null, resource_attributes: { a: 1 }, action: null }],
  ];
  for (const body of bodies) t.ok(isValidCheckList(body, DEFAULT_CONFIG), JSON.stringify(body));
});

t.test('a body the hand check refuses keeps the details of Ajv and of the limits', async (t) => {
  const at = (body: unknown, bounds: RequestLimits = DEFAULT_CONFIG) => {
    const text = JSON.stringify(body);
    try {
      readBulkBody(text, validate, { ...bounds, bulkCheckMaxRequests: 10, maxAnswerSize: DEFAULT_CONFIG.maxAnswerSize, sideWording: 'eunomia' });
      return undefined;
    } catch (error) {
      return (error as { issues?: unknown }).issues;
    }
  };
  // As main answered them before the hand check (compared with its build).
  t.same(at([{ principal: { attributes: { '': 1 } } }]), [
    { loc: ['body', 0, 'principal', 'attributes'], msg: 'must NOT have fewer than 1 characters', type: 'minLength' },
    { loc: ['body', 0, 'principal', 'attributes'], msg: 'property name must be valid', type: 'propertyNames' },
  ]);
  t.same(at([{ resource: { attributes: [{ key: 'a' }] } }]), [{ loc: ['body', 0, 'resource', 'attributes', 0, 'value'], msg: 'Field required', type: 'missing' }]);
  t.same(at([{ action: 'x'.repeat(20) }], { maxJsonDepth: 10, maxStringLength: 16 }), [{ loc: ['body', 0, 'action'], msg: 'String should have at most 16 characters', type: 'string_too_long' }]);
  t.same(at([{ principal: { attributes: { a: [[[[1]]]] } } }], { maxJsonDepth: 6, maxStringLength: 16 }), [
    { loc: ['body', 0, 'principal', 'attributes', 'a', 0, 0], msg: 'is nested more than 6 levels deep', type: 'value_error' },
  ]);
});
