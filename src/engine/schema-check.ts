import { CANONICAL_OPERATOR, OPERATOR_DEFINITIONS, type JsonType } from './operators/index.js';
import type { Condition, Operator, Policy } from '../schemas/policy.js';
import type { Location, ValidationIssue } from '../schemas/errors.js';
import type { RequestPart } from './entity.js';
import { jsonEqual } from './json-equal.js';
import { arrayIndex, parsePath } from './paths.js';
import { NAMED_VALUE, parseReference } from './references.js';
import { CONDITION_LISTS } from './validate.js';
import { eachCondition, setItems, setsReferred } from './condition-items.js';

/**
 * The attribute schemas of each part of a check, as a schema document holds them (see
 * docs/schemas.md): one for every entity of the part, and one per type.
 */
export type AttributeSchemaSets = Partial<Record<RequestPart, { attributes?: unknown; types?: Record<string, unknown> }>>;

/** What a path leads to in one schema: a declared schema, nothing declared, or a schema too open to tell (a $ref, patternProperties...). */
type Found = { declared: Record<string, unknown> | boolean } | 'undeclared' | 'unknown';


const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const hasOwn = (object: Record<string, unknown>, key: string) => Object.prototype.hasOwnProperty.call(object, key);

function jsonTypeOf(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value as JsonType;
}

/** Keywords that make what a path leads to depend on more than `properties` and `items`: such a schema is not second-guessed. */
const OPEN_KEYWORDS = ['$ref', '$dynamicRef', 'allOf', 'anyOf', 'oneOf', 'not', 'if', 'patternProperties', 'dependentSchemas', 'unevaluatedProperties', 'prefixItems'];

/** Where the attribute steps of a path lead in `schema` (the schema of an attributes object). */
function follow(schema: unknown, steps: readonly string[]): Found {
  let at = schema;
  for (const step of steps) {
    if (!isObject(at) || OPEN_KEYWORDS.some((keyword) => hasOwn(at as Record<string, unknown>, keyword))) return 'unknown';
    const properties = at.properties;
    if (isObject(properties) && hasOwn(properties, step)) {
      at = properties[step];
    } else if (arrayIndex(step) !== undefined && at.items !== undefined) {
      at = at.items;
    } else if (isObject(at.additionalProperties)) {
      at = at.additionalProperties;
    } else if (at.additionalProperties === true) {
      return 'unknown';
    } else {
      // Undeclared when the schema lists keys or items and this step is not among them, or declares a type that holds neither.
      const types = declaredTypes(at);
      const saysNothing = !isObject(properties) && at.items === undefined && at.additionalProperties === undefined;
      const mayHoldIt = types === undefined || types.has('object') || types.has('array');
      return saysNothing && mayHoldIt ? 'unknown' : 'undeclared';
    }
  }
  return isObject(at) || typeof at === 'boolean' ? { declared: at } : 'unknown';
}

/** The JSON types a schema allows, when it says (type, enum or const); undefined when it does not. */
function declaredTypes(schema: Record<string, unknown> | boolean): Set<JsonType> | undefined {
  if (typeof schema === 'boolean') return undefined;
  if (typeof schema.type === 'string') return new Set([schema.type as JsonType]);
  if (Array.isArray(schema.type)) return new Set(schema.type as JsonType[]);
  if (Array.isArray(schema.enum)) return new Set(schema.enum.map(jsonTypeOf));
  if (hasOwn(schema, 'const')) return new Set([jsonTypeOf(schema.const)]);
  return undefined;
}

/** Whether a value of JSON type `type` is of one of `types` (an integer is a number). */
const admits = (types: ReadonlySet<JsonType>, type: JsonType) => types.has(type) || (type === 'integer' && types.has('number'));

const overlap = (left: ReadonlySet<JsonType>, right: ReadonlySet<JsonType>) => [...left].some((type) => admits(right, type) || (type === 'number' && right.has('integer')));

const listed = (types: ReadonlySet<JsonType>) => [...types].join(' or ');

/** The formats the declarations give their strings, or undefined when one of them gives none (any string, then). */
function formatsOf(declarations: readonly (Record<string, unknown> | boolean)[]): Set<string> | undefined {
  const formats = new Set<string>();
  for (const declaration of declarations) {
    if (typeof declaration === 'boolean' || typeof declaration.format !== 'string') return undefined;
    formats.add(declaration.format);
  }
  return formats;
}

/** The schemas of one part a path may meet: the part's own, and each type's. */
function partSchemas(schemas: AttributeSchemaSets, part: RequestPart): unknown[] {
  const sets = schemas[part];
  if (sets === undefined) return [];
  const types = isObject(sets.types) ? Object.values(sets.types) : [];
  return sets.attributes === undefined ? types : [sets.attributes, ...types];
}

/** What an attribute path of a part leads to: the schemas that declare it, or 'undeclared' when every schema of the part leaves it out, or undefined when none can tell. */
function declarationsOf(schemas: AttributeSchemaSets, part: RequestPart, path: string): (Record<string, unknown> | boolean)[] | 'undeclared' | undefined {
  const parsed = parsePath(path, NAMED_VALUE[part]);
  if ('error' in parsed || parsed.kind !== 'attribute') return undefined;
  const candidates = partSchemas(schemas, part);
  if (candidates.length === 0) return undefined;
  const found = candidates.map((schema) => follow(schema, parsed.steps));
  const declared = found.flatMap((each) => (typeof each === 'object' ? [each.declared] : []));
  if (declared.length > 0) return declared;
  return found.every((each) => each === 'undeclared') ? 'undeclared' : undefined;
}

/** The union of the types the declarations allow, or undefined when one of them does not say. */
function typesOf(declarations: readonly (Record<string, unknown> | boolean)[]): Set<JsonType> | undefined {
  const union = new Set<JsonType>();
  for (const declaration of declarations) {
    const types = declaredTypes(declaration);
    if (types === undefined) return undefined;
    for (const type of types) union.add(type);
  }
  return union;
}

/** The enumerated values the declarations allow, or undefined when one of them is not an enumeration. */
function enumOf(declarations: readonly (Record<string, unknown> | boolean)[]): unknown[] | undefined {
  const values: unknown[] = [];
  for (const declaration of declarations) {
    if (typeof declaration === 'boolean') return undefined;
    if (Array.isArray(declaration.enum)) values.push(...declaration.enum);
    else if (hasOwn(declaration, 'const')) values.push(declaration.const);
    else return undefined;
  }
  return values;
}

/** Most problems one condition reports (an `in` list may hold many wrong values), and most enumerated values one message lists. */
const MAX_PROBLEMS_PER_CONDITION = 5;
const MAX_LISTED_VALUES = 10;

const someOf = (values: readonly unknown[]) => {
  const listed = values.slice(0, MAX_LISTED_VALUES).map((value) => JSON.stringify(value)).join(', ');
  return values.length > MAX_LISTED_VALUES ? `${listed}, and ${values.length - MAX_LISTED_VALUES} more` : listed;
};

const isScalar = (value: unknown) => value === null || typeof value !== 'object';

/**
 * Whether a value is one of `values`, as jsonEqual compares them: scalars by a set of their JSON (an
 * `in` list and an enumeration may both be long, and comparing each with each would stall the write).
 */
function membership(values: readonly unknown[]): (value: unknown) => boolean {
  const scalars = new Set(values.filter(isScalar).map((value) => JSON.stringify(value)));
  const structured = values.filter((value) => !isScalar(value));
  return (value) => (isScalar(value) ? scalars.has(JSON.stringify(value)) : structured.some((each) => jsonEqual(each, value)));
}

/** What the condition's value is compared with as a whole: the value, or each item of a list, as the operator says. */
const comparedValues = (operator: Operator, value: unknown): unknown[] | undefined => {
  const checked = OPERATOR_DEFINITIONS[operator].schemaChecksValue;
  if (checked === 'whole') return [value];
  if (checked === 'items' && Array.isArray(value)) return value;
  return undefined;
};

function conditionProblems(condition: Condition, part: RequestPart, schemas: AttributeSchemaSets): { at: string; msg: string }[] {
  const declarations = declarationsOf(schemas, part, condition.path);
  const attribute = `${part} attribute '${condition.path.replace(/^attributes\./, '')}'`;
  if (declarations === 'undeclared') return [{ at: 'path', msg: `${attribute} is not declared by the ${part} schemas` }];
  if (declarations === undefined) return [];
  const types = typesOf(declarations);
  const operator = CANONICAL_OPERATOR[condition.operator];
  const problems: { at: string; msg: string }[] = [];
  const { operandTypes, operandFormats } = OPERATOR_DEFINITIONS[operator];
  if (types !== undefined && operandTypes !== 'any' && !operandTypes.some((type) => types.has(type))) {
    problems.push({ at: 'operator', msg: `operator '${condition.operator}' cannot hold for ${attribute}, declared ${listed(types)}` });
  }
  const formats = operandFormats === 'any' ? undefined : formatsOf(declarations);
  if (formats !== undefined && operandFormats !== 'any' && !operandFormats.some((format) => formats.has(format))) {
    const wanted = operandFormats.map((format) => `'${format}'`).join(' or ');
    problems.push({ at: 'operator', msg: `operator '${condition.operator}' holds only for strings of format ${wanted}, and ${attribute} is declared of format ${[...formats].map((format) => `'${format}'`).join(' or ')}` });
  }
  if (condition.value_from !== undefined) return [...problems, ...relationProblems(condition.value_from, attribute, types, schemas)];
  const compared = comparedValues(operator, condition.value);
  if (compared === undefined) return problems;
  const allowed = enumOf(declarations);
  const isAllowed = allowed === undefined ? undefined : membership(allowed);
  for (const value of compared) {
    if (problems.length >= MAX_PROBLEMS_PER_CONDITION) break;
    if (types !== undefined && !admits(types, jsonTypeOf(value))) {
      problems.push({ at: 'value', msg: `${JSON.stringify(value)} is ${jsonTypeOf(value)}, but ${attribute} is declared ${listed(types)}` });
    } else if (isAllowed !== undefined && !isAllowed(value)) {
      problems.push({ at: 'value', msg: `${JSON.stringify(value)} is not one of the values ${attribute} may take: ${someOf(allowed!)}` });
    }
  }
  return problems;
}

/** A relation between two attributes of types that never meet, or to an attribute no schema declares. */
function relationProblems(valueFrom: string, attribute: string, types: Set<JsonType> | undefined, schemas: AttributeSchemaSets): { at: string; msg: string }[] {
  const reference = parseReference(valueFrom);
  if ('error' in reference) return [];
  const declarations = declarationsOf(schemas, reference.part, reference.path);
  if (declarations === 'undeclared') return [{ at: 'value_from', msg: `'${valueFrom}' is not declared by the ${reference.part} schemas` }];
  const otherTypes = declarations === undefined ? undefined : typesOf(declarations);
  if (types === undefined || otherTypes === undefined || overlap(types, otherTypes)) return [];
  return [{ at: 'value_from', msg: `${attribute}, declared ${listed(types)}, is related to '${valueFrom}', declared ${listed(otherTypes)}: they can never be equal or ordered` }];
}

/**
 * What a policy's conditions say that its attribute schemas contradict: a path no schema of the
 * part declares, an operator that cannot hold for the declared type, a value of another type or not
 * in the enumeration, a relation between attributes whose types never meet. Schemas too open to
 * tell (no type, `$ref`, combinators, patternProperties) are given the benefit of the doubt. `at`
 * is where the policy sits in the request.
 */
export function schemaIssues(policy: Policy, schemas: AttributeSchemaSets, at: Location): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  /** Each set once per part of the check it is used on, named where it is defined. */
  const setsChecked = new Set<string>();
  policy.rules.forEach((rule, ruleIndex) => {
    for (const [list, part] of CONDITION_LISTS) {
      for (const [condition, where] of eachCondition(rule[list] ?? [])) {
        for (const problem of conditionProblems(condition, part, schemas)) {
          issues.push({ loc: [...at, 'rules', ruleIndex, list, ...where, problem.at], msg: `rule '${rule.name}': ${problem.msg}`, type: 'schema_error' });
        }
      }
      for (const [name, , from] of setsReferred(rule[list] ?? [])) {
        // Another policy's sets are checked with that policy.
        if ((from !== undefined && from !== policy.name) || setsChecked.has(JSON.stringify([name, part]))) continue;
        setsChecked.add(JSON.stringify([name, part]));
        for (const [condition, where] of eachCondition(setItems(policy, name) ?? [])) {
          for (const problem of conditionProblems(condition, part, schemas)) {
            issues.push({ loc: [...at, 'condition_sets', name, ...where, problem.at], msg: `set '${name}', on the ${part}: ${problem.msg}`, type: 'schema_error' });
          }
        }
      }
    }
  });
  return issues;
}
