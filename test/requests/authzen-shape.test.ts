import t from 'tap';
import fc from 'fast-check';
import { isValidEvaluation } from '../../src/requests/authzen-shape.js';
import { authzenEvaluationSchema } from '../../src/schemas/authzen.js';
import { compileListingErrors } from '../../src/schemas/validation.js';

// The hand check lets /access/v1/evaluation skip Ajv: it must accept a body exactly when Ajv would,
// or a 400 could be lost (or Ajv asked for nothing). Compared on generated bodies, mostly near-valid
// ones with one thing wrong. AUTHZEN_SHAPE_RUNS sets the count.

const RUNS = Number(process.env.AUTHZEN_SHAPE_RUNS ?? 3000);
const validate = compileListingErrors(authzenEvaluationSchema);

const word = fc.oneof(fc.constantFrom('user', 'alice', 'read', '', '__proto__', 'properties'), fc.string({ maxLength: 8 }));
const value = fc.oneof(fc.constantFrom(1, 'it', true, null, [], {}), fc.jsonValue({ maxDepth: 3 }));
const properties = fc.oneof(fc.dictionary(word, value, { maxKeys: 3 }), value);
const entity = fc.oneof(
  fc.record({ type: fc.oneof(word, value), id: fc.oneof(word, value), properties, extra: value }, { requiredKeys: [] }),
  fc.record({ type: word, id: word }),
  fc.record({ type: word, id: word, properties: fc.dictionary(word, value, { maxKeys: 3 }) }),
  value,
);
const action = fc.oneof(fc.record({ name: fc.oneof(word, value), properties, extra: value }, { requiredKeys: [] }), fc.record({ name: word }), value);
const body = fc.oneof(
  fc.record({ subject: entity, action, resource: entity, context: properties, extra: value }, { requiredKeys: [] }),
  fc.record({ subject: entity, action, resource: entity }),
  value,
);

t.test('the hand check accepts an evaluation exactly when Ajv does', async (t) => {
  fc.assert(
    fc.property(body, (generated) => {
      // Through JSON, as bodies arrive: undefined fields vanish, keys such as __proto__ stay own keys.
      const parsed = JSON.parse(JSON.stringify(generated)) as unknown;
      return isValidEvaluation(parsed) === validate(parsed);
    }),
    { numRuns: RUNS },
  );
  t.pass(`${RUNS} generated bodies`);
});

t.test('the hand check accepts the common evaluations, so they skip Ajv', async (t) => {
  const bodies = [
    { subject: { type: 'user', id: 'alice' }, action: { name: 'read' }, resource: { type: 'doc', id: '1' } },
    { subject: { type: 'user', id: 'alice', properties: { role: 'reader' } }, action: { name: 'read', properties: { method: 'GET' } }, resource: { type: 'doc', id: '1', properties: { id: 'doc-1' } }, context: { time: 'now' } },
    { subject: { type: 'user', id: 'alice', realm: 'x' }, action: { name: 'read', verb: 'GET' }, resource: { type: 'doc', id: '1' }, page: { limit: 1 } },
  ];
  for (const evaluation of bodies) t.ok(isValidEvaluation(evaluation), JSON.stringify(evaluation));
  t.notOk(isValidEvaluation({ subject: { type: 'user', id: 'alice', properties: { '': 1 } }, action: { name: 'read' }, resource: { type: 'doc', id: '1' } }), 'an empty property name is refused');
});
