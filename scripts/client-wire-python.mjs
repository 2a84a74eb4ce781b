// Generates clients/python/verdict_client/wire.py from the server's wire schemas (src/schemas/, as
// built into dist/): each object schema with properties a TypedDict (its optional keys `total=False`,
// its required ones `Required`), nested ones named after their place, alike ones written once; the
// header names and the change feed's heartbeat as constants. Run after `npm run build`.
//
//   node scripts/client-wire-python.mjs           writes the file
//   node scripts/client-wire-python.mjs --check   exits 1 when the file differs from what it would write
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const schemas = (file) => import(new URL(`../dist/src/schemas/${file}.js`, import.meta.url).href);
const [check, plan, entity, errors, wire] = await Promise.all(['check', 'plan', 'entity', 'errors', 'wire'].map(schemas));

/** The types generated, by the name Python code uses. */
const ROOTS = [
  ['CheckRequest', check.checkRequestSchema, 'A check, in either form the server takes: nested (`principal`, `resource`) or flat (`principal_uri`, ...).'],
  ['Decision', check.checkResponseSchema, 'A decision: `allowed`, the `reason`, and `explain` when it was asked for.'],
  ['PlanRequest', plan.planRequestSchema, '`POST /plan`: which resources a principal may act on.'],
  ['PlanResponse', plan.planResponseSchema, 'What a plan answers.'],
  ['EntityCreate', entity.entityCreateSchema, 'An entity to register: its `uri`, `type`, and attributes.'],
  ['Entity', entity.entitySchema, 'A registered entity, as the server answers it.'],
  ['ValidationIssue', errors.validationIssueSchema, "One item of a 422's `detail`: where (`loc`), what (`msg`), and its kind."],
  ['ChangeLine', wire.changeLineSchema, 'One line of the decision change feed (`GET /admin/changes`); a line with `at` alone is a heartbeat.'],
];
const ROOT_DOCS = new Map(ROOTS.map(([name, , doc]) => [name, doc]));
const CONSTANTS = ['API_KEY_HEADER', 'REVISION_HEADER', 'MIN_REVISION_HEADER', 'REQUEST_ID_HEADER', 'HEARTBEAT_MILLIS'];

const TARGET = process.env.CLIENT_WIRE_TARGET ?? fileURLToPath(new URL('../clients/python/verdict_client/wire.py', import.meta.url));
const SCALARS = { string: 'str', integer: 'int', number: 'float', boolean: 'bool', null: 'None' };
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Python's keywords: a field so named (`from`) is no attribute name, so its class is written in TypedDict's functional form. */
const KEYWORDS = new Set(
  'False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield'.split(' '),
);

const classes = [];
const classBySchema = new Map();
const capitalized = (key) => key.split(/[^A-Za-z0-9]+/).map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('');
const literal = (value) => (value === null ? 'None' : typeof value === 'boolean' ? (value ? 'True' : 'False') : JSON.stringify(value));

/** The Python type of `schema`; an object with properties becomes a class named `name`. */
function typeOf(schema, name) {
  if (schema === true || schema === undefined || Object.keys(schema).every((key) => key === 'description')) return 'Any';
  if ('const' in schema) return `Literal[${literal(schema.const)}]`;
  if (Array.isArray(schema.enum)) {
    const values = schema.enum.filter((value) => value !== null).map(literal);
    return [...(values.length > 0 ? [`Literal[${values.join(', ')}]`] : []), ...(schema.enum.includes(null) ? ['None'] : [])].join(' | ');
  }
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives)) return unique(alternatives.map((alternative, index) => typeOf(alternative, `${name}${index + 1}`))).join(' | ');
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  if (types.length === 0) return schema.properties ? typedDict(schema, name) : 'Any';
  return unique(
    types.map((type) => {
      if (type === 'array') return `list[${typeOf(schema.items, `${name}Item`)}]`;
      if (type === 'object') return schema.properties && Object.keys(schema.properties).length > 0 ? typedDict(schema, name) : 'dict[str, Any]';
      return SCALARS[type];
    }),
  ).join(' | ');
}

const unique = (types) => [...new Set(types.flatMap((type) => type.split(' | ')))];

/** The TypedDict of an object schema, written once for alike schemas. */
function typedDict(schema, name) {
  const key = JSON.stringify({ properties: schema.properties, required: schema.required });
  const known = classBySchema.get(key);
  if (known !== undefined) return known;
  classBySchema.set(key, name);
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties).map(([field, property]) => {
    if (!IDENTIFIER.test(field)) throw new Error(`${name}.${field} is no Python name`);
    const type = typeOf(property, `${name}${capitalized(field)}`);
    return { field, type: required.has(field) ? `Required[${type}]` : type, description: property.description?.replaceAll('"""', "'''") };
  });
  const description = schema.description ?? ROOT_DOCS.get(name);
  const docstring = description ? `    """${description}"""\n\n` : '';
  if (fields.some(({ field }) => KEYWORDS.has(field))) {
    // The functional form evaluates its types when the module loads: each is quoted, a forward reference.
    const entries = fields.map(({ field, type }) => `        ${JSON.stringify(field)}: ${JSON.stringify(type)},\n`).join('');
    classes.push(`${name} = TypedDict(\n    ${JSON.stringify(name)},\n    {\n${entries}    },\n    total=False,\n)${description ? `\n"""${description}"""` : ''}\n`);
    return name;
  }
  const lines = fields.map(({ field, type, description: doc }) => `    ${field}: ${type}\n${doc === undefined ? '' : `    """${doc}"""\n`}`);
  classes.push(`class ${name}(TypedDict, total=False):\n${docstring}${lines.join('')}`);
  return name;
}

for (const [name, schema] of ROOTS) typeOf(schema, name);
const text = `# Generated by \`node scripts/client-wire-python.mjs\` from the server's wire schemas (src/schemas/):
# what the client sends and reads. Do not edit; regenerate.
from __future__ import annotations

from typing import Any, Literal, Required, TypedDict

${CONSTANTS.map((constant) => `${constant} = ${literal(wire[constant])}`).join('\n')}


${classes.join('\n\n')}`;

if (!process.argv.includes('--check')) writeFileSync(TARGET, text);
else if (readFileSync(TARGET, 'utf8') !== text) {
  console.error(`${TARGET} is out of date: run node scripts/client-wire-python.mjs`);
  process.exit(1);
}
