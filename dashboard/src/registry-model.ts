/** Registry entities as the admin API returns them, and the attributes form's JSON. */
import type { JsonValue } from './json-text.js';

export interface RegisteredAttribute {
  key: string;
  value: JsonValue;
  updated_at: string;
  registered_at: string;
}

export interface Entity {
  uri: string;
  type: string | null;
  attributes: RegisteredAttribute[];
  registered_at: string;
}

export const PAGE_SIZE = 10;

export function attributesObject(entity: Entity): Record<string, JsonValue> {
  return Object.fromEntries(entity.attributes.map((attribute) => [attribute.key, attribute.value]));
}

/** "Showing 11–20 of 42" for the page starting at `offset`. */
export function pageLabel(offset: number, shown: number, total: number): string {
  if (total === 0 || shown === 0) return `Showing none of ${total}`;
  return `Showing ${offset + 1}–${offset + shown} of ${total}`;
}
