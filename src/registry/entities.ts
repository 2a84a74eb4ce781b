import { randomUUID } from 'node:crypto';
import type { Entity, EntityCreate, EntityType, RegisteredAttribute } from '../schemas/entity.js';

/** Registered attributes as the resolver reads them. */
export function attributeMapOf(entity: Entity): Map<string, unknown> {
  return new Map(entity.attributes.map((attribute) => [attribute.key, attribute.value]));
}

/**
 * UTF-16 units reordered so that plain comparison follows code points: units from U+E000 up move
 * below the surrogates, which stand for code points beyond U+FFFF.
 */
const codePointRank = (unit: number) => (unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit);

/** Code-point order, as UTF-8 bytes sort (and so as Eunomia's SQLite index lists attribute keys). */
function byCodePoint(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let index = 0; index < length; index++) {
    const difference = codePointRank(a.charCodeAt(index)) - codePointRank(b.charCodeAt(index));
    if (difference !== 0) return difference;
  }
  return a.length - b.length;
}

/** The entity as the registry answers it: attributes sorted by key, as Eunomia lists them. */
export function inKeyOrder(entity: Entity): Entity {
  return { ...entity, attributes: [...entity.attributes].sort((x, y) => byCodePoint(x.key, y.key)) };
}

/** A new registry entry; `attributes` is already a Map (see toAttributeMap). */
export function newEntity(request: Pick<EntityCreate, 'uri' | 'type'>, attributes: ReadonlyMap<string, unknown>, now: string): Entity {
  return {
    uri: request.uri ?? randomUUID(),
    type: (request.type ?? null) as EntityType | null,
    attributes: [...attributes].map(([key, value]) => ({ key, value, updated_at: now, registered_at: now })),
    registered_at: now,
  };
}

/**
 * The entity after an update. `override` replaces every attribute; otherwise the keys sent are
 * upserted in place (keeping their `registered_at`), new keys appended, and the others kept.
 */
export function updatedEntity(
  entity: Entity,
  change: { type?: EntityType | null; attributes: ReadonlyMap<string, unknown>; override: boolean },
  now: string,
): Entity {
  const attributes: RegisteredAttribute[] = change.override
    ? []
    : entity.attributes.map((attribute) =>
        change.attributes.has(attribute.key)
          ? { ...attribute, value: change.attributes.get(attribute.key), updated_at: now }
          : attribute,
      );
  const registeredKeys = new Set(attributes.map((attribute) => attribute.key));
  for (const [key, value] of change.attributes) {
    if (!registeredKeys.has(key)) attributes.push({ key, value, updated_at: now, registered_at: now });
  }
  return {
    uri: entity.uri,
    type: change.type ?? entity.type,
    attributes,
    registered_at: entity.registered_at,
  };
}
