import t from 'tap';
import { schemaIssues, type AttributeSchemaSets } from '../../src/engine/index.js';
import type { ConditionItem, Policy } from '../../src/schemas/policy.js';

const SCHEMAS: AttributeSchemaSets = {
  principal: {
    attributes: { type: 'object', properties: { department: { type: 'string' } } },
    types: {
      user: {
        type: 'object',
        properties: {
          level: { type: 'integer' },
          clearance: { enum: [1, 2, 3] },
          email: { type: 'string', format: 'email' },
          tags: { type: 'array', items: { type: 'string' } },
          address: { type: 'object', properties: { city: { type: 'string' } } },
          extra: { type: 'object' },
        },
      },
    },
  },
  resource: { attributes: { type: 'object', properties: { owner: { type: 'string' }, size: { type: 'number' } } } },
};

const policyWith = (principal: ConditionItem[], resource: ConditionItem[] = []): Policy => ({
  version: '1.0',
  name: 'p',
  description: null,
  default_effect: 'deny',
  rules: [{ name: 'r', effect: 'allow', actions: ['read'], principal_conditions: principal, resource_conditions: resource }],
});

const messages = (principal: ConditionItem[], resource: ConditionItem[] = [], schemas = SCHEMAS) =>
  schemaIssues(policyWith(principal, resource), schemas, ['body']).map(({ loc, msg }) => `${loc.slice(3).join('.')}: ${msg}`);

t.test('a policy that keeps to the schemas has no issues', async (t) => {
  t.same(
    messages(
      [
        { path: 'attributes.level', operator: 'gte', value: 3 },
        { path: 'attributes.clearance', operator: 'in', value: [1, 2] },
        { path: 'attributes.department', operator: '==', value: 'it' },
        { path: 'attributes.tags', operator: 'contains', value: 'x' },
        { path: 'attributes.tags.0', operator: 'startswith', value: 'x' },
        { path: 'attributes.address.city', operator: 'exists' },
        { path: 'attributes.extra.anything.at.all', operator: '==', value: 1 },
        { path: 'uri', operator: 'startswith', value: 'user:' },
      ],
      [
        { path: 'attributes.owner', operator: '==', value_from: 'principal.attributes.email' },
        { path: 'attributes.size', operator: 'lte', value: 10.5 },
      ],
    ),
    [],
  );
});

t.test('a path no schema of the part declares', async (t) => {
  t.same(messages([{ path: 'attributes.levle', operator: 'gte', value: 3 }]), [
    "principal_conditions.0.path: rule 'r': principal attribute 'levle' is not declared by the principal schemas",
  ]);
  t.same(messages([{ path: 'attributes.address.town', operator: 'exists' }]), [
    "principal_conditions.0.path: rule 'r': principal attribute 'address.town' is not declared by the principal schemas",
  ]);
  t.same(messages([{ path: 'attributes.level.0', operator: 'exists' }]), [
    "principal_conditions.0.path: rule 'r': principal attribute 'level.0' is not declared by the principal schemas",
  ]);
});

t.test('an operator that cannot hold for the declared type', async (t) => {
  t.same(messages([{ path: 'attributes.department', operator: 'gt', value: 3 }]), [
    "principal_conditions.0.operator: rule 'r': operator 'gt' cannot hold for principal attribute 'department', declared string",
  ]);
  t.same(messages([{ path: 'attributes.level', operator: 'startswith', value: '1' }]), [
    "principal_conditions.0.operator: rule 'r': operator 'startswith' cannot hold for principal attribute 'level', declared integer",
  ]);
  t.same(messages([{ path: 'attributes.level', operator: 'in_cidr', value: '10.0.0.0/8' }]), [
    "principal_conditions.0.operator: rule 'r': operator 'in_cidr' cannot hold for principal attribute 'level', declared integer",
  ]);
  t.same(messages([{ path: 'attributes.level', operator: 'matches', value: '^1' }]), [
    "principal_conditions.0.operator: rule 'r': operator 'matches' cannot hold for principal attribute 'level', declared integer",
  ]);
  t.same(messages([{ path: 'attributes.department', operator: 'not_matches', value: '^x' }]), [], 'a pattern on a string');
});

t.test('a value of the wrong type, or outside the enumeration', async (t) => {
  t.same(messages([{ path: 'attributes.level', operator: '==', value: '5' }]), [
    `principal_conditions.0.value: rule 'r': "5" is string, but principal attribute 'level' is declared integer`,
  ]);
  t.same(messages([{ path: 'attributes.level', operator: 'not_in', value: [1, 2.5] }]), [
    `principal_conditions.0.value: rule 'r': 2.5 is number, but principal attribute 'level' is declared integer`,
  ]);
  t.same(messages([], [{ path: 'attributes.size', operator: '==', value: 3 }]), [], 'an integer is a number');
  t.same(messages([{ path: 'attributes.clearance', operator: '==', value: 4 }]), [
    "principal_conditions.0.value: rule 'r': 4 is not one of the values principal attribute 'clearance' may take: 1, 2, 3",
  ]);
});

t.test('a relation between attributes whose types never meet, or to an undeclared one', async (t) => {
  t.same(messages([], [{ path: 'attributes.owner', operator: '==', value_from: 'principal.attributes.level' }]), [
    "resource_conditions.0.value_from: rule 'r': resource attribute 'owner', declared string, is related to 'principal.attributes.level', declared integer: they can never be equal or ordered",
  ]);
  t.same(messages([], [{ path: 'attributes.size', operator: 'gte', value_from: 'principal.attributes.level' }]), [], 'integer and number meet');
  t.same(messages([], [{ path: 'attributes.owner', operator: '==', value_from: 'principal.attributes.mail' }]), [
    "resource_conditions.0.value_from: rule 'r': 'principal.attributes.mail' is not declared by the principal schemas",
  ]);
});

t.test('schemas too open to tell are given the benefit of the doubt', async (t) => {
  const open: AttributeSchemaSets = {
    principal: { attributes: { type: 'object', properties: { level: { type: 'integer' } }, additionalProperties: true } },
    resource: { attributes: { $ref: '#/$defs/x', $defs: { x: { type: 'object' } } } },
    context: { attributes: { type: 'object' } },
  };
  t.same(
    messages(
      [{ path: 'attributes.anything', operator: 'gt', value: 1 }],
      [{ path: 'attributes.whatever', operator: '==', value_from: 'context.attributes.free' }],
      open,
    ),
    [],
  );
  t.same(messages([{ path: 'attributes.level', operator: '==', value: 1 }], [], {}), [], 'no schemas, nothing to say');
});

t.test('a path that is undeclared for one type but declared for another is declared', async (t) => {
  const byType: AttributeSchemaSets = {
    principal: {
      types: {
        user: { type: 'object', properties: { level: { type: 'integer' } } },
        service: { type: 'object', properties: { scope: { type: 'string' } } },
      },
    },
  };
  t.same(messages([{ path: 'attributes.scope', operator: '==', value: 'x' }], [], byType), []);
  t.same(messages([{ path: 'attributes.level', operator: '==', value: 'x' }], [], byType), [
    `principal_conditions.0.value: rule 'r': "x" is string, but principal attribute 'level' is declared integer`,
  ]);
});

t.test('long lists and long enumerations are reported in bounded words', async (t) => {
  const schemas: AttributeSchemaSets = { principal: { attributes: { type: 'object', properties: { code: { enum: Array.from({ length: 20_000 }, (_, i) => i) } } } } };
  const found = messages([{ path: 'attributes.code', operator: 'in', value: Array.from({ length: 100_000 }, (_, i) => -1 - i) }], [], schemas);
  t.equal(found.length, 5, 'five problems for one condition at most');
  t.equal(found[0], "principal_conditions.0.value: rule 'r': -1 is not one of the values principal attribute 'code' may take: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, and 19990 more");
  t.same(messages([{ path: 'attributes.code', operator: 'in', value: Array.from({ length: 100_000 }, (_, i) => i % 20_000) }], [], schemas), [], 'every value allowed');
});

t.test('conditions in groups are checked against the schemas too, each named where it stands', async (t) => {
  const size = { path: 'attributes.size', operator: 'startswith', value: 'x' } as const;
  const fine = { path: 'attributes.owner', operator: '==', value: 'a' } as const;
  const found = messages([], [{ none_of: [[fine], [fine, size]] }]);
  t.equal(found.length, 1);
  t.match(found[0], /^resource_conditions\.0\.none_of\.1\.1\./);
});

t.test('a range or a time operator on a string whose declared format is another is a contradiction; the formats it takes, or none, are not', async (t) => {
  const schemas: AttributeSchemaSets = {
    principal: {
      attributes: {
        type: 'object',
        properties: { ip: { type: 'string', format: 'ipv4' }, email: { type: 'string', format: 'email' }, since: { type: 'string', format: 'date-time' }, note: { type: 'string' } },
      },
    },
  };
  const found = (condition: ConditionItem) => messages([condition], [], schemas);
  t.same(found({ path: 'attributes.ip', operator: 'in_cidr', value: '10.0.0.0/8' }), []);
  t.same(found({ path: 'attributes.since', operator: 'before', value: '2030-01-01T00:00:00Z' }), []);
  t.same(found({ path: 'attributes.note', operator: 'in_cidr', value: '10.0.0.0/8' }), [], 'no format: any string may be an address');
  t.same(found({ path: 'attributes.email', operator: 'not_in_cidr', value: '10.0.0.0/8' }), [
    "principal_conditions.0.operator: rule 'r': operator 'not_in_cidr' holds only for strings of format 'ipv4' or 'ipv6', and principal attribute 'email' is declared of format 'email'",
  ]);
  t.same(found({ path: 'attributes.ip', operator: 'after', value: '2030-01-01T00:00:00Z' }), [
    "principal_conditions.0.operator: rule 'r': operator 'after' holds only for strings of format 'date-time', and principal attribute 'ip' is declared of format 'ipv4'",
  ]);
});
