import fc from 'fast-check';

/**
 * Values for the requests the server's own OpenAPI document declares (see helpers/openapi.ts):
 * bodies and parameters generated from the declared schemas, stretched toward the limits.
 */

type Schema = Record<string, unknown>;

/** What generated values draw on: words the server knows (policy names, actions, attribute paths), and how large things may get. */
export interface Vocabulary {
  words: string[];
  paths: string[];
  /** Longest generated string; items of a generated list. */
  maxString: number;
  maxItems: number;
}

const HOSTILE_TEXT = ['', ' ', '__proto__', 'constructor', '%', '\u0000', '\ud800', '😀', 'a.b', '..', 'attributes.', '$x', '0'];

function text(vocabulary: Vocabulary): fc.Arbitrary<string> {
  return fc.oneof(
    { arbitrary: fc.constantFrom(...vocabulary.words), weight: 6 },
    { arbitrary: fc.constantFrom(...vocabulary.paths), weight: 2 },
    { arbitrary: fc.constantFrom(...HOSTILE_TEXT), weight: 2 },
    { arbitrary: fc.string({ maxLength: 16 }), weight: 2 },
    { arbitrary: fc.tuple(fc.constantFrom('x', 'é', '"', '\\'), fc.integer({ min: 100, max: vocabulary.maxString })).map(([unit, length]) => unit.repeat(length)), weight: 1 },
  );
}

/** Any JSON value, sometimes nested far deeper than a person would write. */
function anyValue(vocabulary: Vocabulary): fc.Arbitrary<unknown> {
  const deep = fc.integer({ min: 10, max: 120 }).map((depth) => {
    let value: unknown = 'bottom';
    for (let level = 0; level < depth; level++) value = level % 2 === 0 ? [value] : { k: value };
    return value;
  });
  return fc.oneof(
    { arbitrary: fc.oneof(text(vocabulary), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null)), weight: 8 },
    { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 3 },
    { arbitrary: fc.array(fc.constantFrom(...vocabulary.words), { maxLength: vocabulary.maxItems }), weight: 1 },
    { arbitrary: deep, weight: 1 },
  );
}

const typesOf = (schema: Schema): string[] => (Array.isArray(schema.type) ? (schema.type as string[]) : typeof schema.type === 'string' ? [schema.type] : []);

/**
 * Values a schema admits, mostly; sizes stretched toward the limits (long strings, long lists,
 * deep nesting), since bounding what grows is what is being tested. Fields the schema does not
 * require are sometimes left out.
 */
export function arbitraryOf(schema: Schema, vocabulary: Vocabulary, depth = 0): fc.Arbitrary<unknown> {
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if (schema.const !== undefined) return fc.constant(schema.const);
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(schema[key])) return fc.oneof(...(schema[key] as Schema[]).map((option) => arbitraryOf(option, vocabulary, depth)));
  }
  const types = typesOf(schema);
  if (types.length === 0 || depth > 6) return anyValue(vocabulary);
  return fc.oneof(
    ...types.map((type): fc.Arbitrary<unknown> => {
      switch (type) {
        case 'null':
          return fc.constant(null);
        case 'boolean':
          return fc.boolean();
        case 'integer':
        case 'number':
          return fc.oneof(fc.integer({ min: 0, max: 5 }), fc.integer({ min: (schema.minimum as number) ?? -10, max: (schema.maximum as number) ?? 1_000_000 }), fc.constant(2 ** 53));
        case 'string':
          return schema.format === 'date-time' ? fc.date({ noInvalidDate: true }).map((date) => date.toISOString()) : text(vocabulary);
        case 'array': {
          const items = schema.items === undefined ? anyValue(vocabulary) : arbitraryOf(schema.items as Schema, vocabulary, depth + 1);
          return fc.oneof({ arbitrary: fc.array(items, { maxLength: 3 }), weight: 4 }, { arbitrary: fc.array(items, { maxLength: vocabulary.maxItems }), weight: 1 });
        }
        default: {
          const properties = Object.entries((schema.properties as Record<string, Schema> | undefined) ?? {});
          const required = (schema.required as string[] | undefined) ?? [];
          const record = fc.record(
            Object.fromEntries(properties.map(([name, property]) => [name, arbitraryOf(property, vocabulary, depth + 1)])),
            { requiredKeys: required.filter((name) => properties.some(([declared]) => declared === name)) },
          );
          const extra = schema.additionalProperties;
          if (extra === undefined || extra === false) return record;
          const values = extra === true ? anyValue(vocabulary) : arbitraryOf(extra as Schema, vocabulary, depth + 1);
          return fc.tuple(record, fc.dictionary(text(vocabulary), values, { maxKeys: vocabulary.maxItems })).map(([declared, more]) => ({ ...more, ...declared }));
        }
      }
    }),
  );
}
