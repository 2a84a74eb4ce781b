/**
 * An entity as the engine sees it during one decision: its uri (when the caller named one) and its
 * attributes after resolution. Attributes live in a Map so that keys such as `__proto__` or
 * `constructor` are ordinary keys, never prototype lookups.
 */
export interface ResolvedEntity {
  uri: string | undefined;
  attributes: ReadonlyMap<string, unknown>;
}
