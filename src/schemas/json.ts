/** Any JSON value, as attributes and condition values carry them. Their JSON types are kept everywhere. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Schema for a value of any JSON type (documented as such in OpenAPI). */
export const anyJsonValueSchema = {
  description: 'Any JSON value; its JSON type is kept.',
} as const;
