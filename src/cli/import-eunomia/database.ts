import Database from 'better-sqlite3';
import type { Effect, Operator } from '../../schemas/policy.js';
import type { PolicyLimits } from '../../engine/index.js';

/**
 * Reads what an Eunomia server (0.3.x) keeps in its SQLite database: policies with their rules and
 * conditions, and the registry's entities with their attributes, each in creation order.
 *
 * How Eunomia stores them, which this reads back as Eunomia's own API answered them:
 * - enum columns (effects, operators, entity types) hold the enum member's name (`ALLOW`,
 *   `GREATER_OR_EQUAL`, `principal`), as SQLAlchemy stores enums;
 * - JSON columns hold the JSON text of what was written, and Eunomia writes `json.dumps(value)`,
 *   a string: a condition value, a rule's actions and an attribute value are JSON in a JSON string.
 *   An attribute updated in place was written without that extra layer. Eunomia decodes a string
 *   value once more when it parses as JSON and keeps it as it is otherwise; so does this reader.
 * - times are SQLite's `CURRENT_TIMESTAMP`, `YYYY-MM-DD HH:MM:SS` in UTC.
 */

export interface EunomiaCondition {
  path: string;
  operator: Operator;
  value: unknown;
}

export interface EunomiaRule {
  name: string;
  description: string | null;
  effect: Effect;
  principal_conditions: EunomiaCondition[];
  resource_conditions: EunomiaCondition[];
  actions: unknown;
}

export interface EunomiaPolicy {
  version: string;
  name: string;
  description: string | null;
  default_effect: Effect;
  rules: EunomiaRule[];
}

export interface EunomiaAttribute {
  key: string;
  value: unknown;
  updatedAt: string;
  registeredAt: string;
}

export interface EunomiaEntity {
  uri: string;
  type: 'principal' | 'resource';
  registeredAt: string;
  attributes: EunomiaAttribute[];
}

/** A row that cannot be read as Eunomia would have read it: what it is, and why. */
export class UnreadableRow extends Error {}

const EFFECTS: Record<string, Effect> = { ALLOW: 'allow', DENY: 'deny' };
const OPERATORS: Record<string, Operator> = {
  EQUALS: 'equals',
  NOT_EQUALS: 'not_equals',
  CONTAINS: 'contains',
  NOT_CONTAINS: 'not_contains',
  STARTS_WITH: 'startswith',
  ENDS_WITH: 'endswith',
  GREATER: 'gt',
  GREATER_OR_EQUAL: 'gte',
  LESS: 'lt',
  LESS_OR_EQUAL: 'lte',
  IN: 'in',
  NOT_IN: 'not_in',
};
const SIDES: Record<string, 'principal' | 'resource'> = { principal: 'principal', resource: 'resource' };

/** Enum columns hold member names; a database written by other tools may hold the values: both are read. */
function enumMember<T extends string>(members: Record<string, T>, stored: unknown, what: string): T {
  const text = String(stored);
  const member = members[text] ?? Object.values(members).find((value) => value === text);
  if (member === undefined) throw new UnreadableRow(`${what} '${text}' is not one Eunomia knows`);
  return member;
}

function parsedJson(text: unknown, what: string): unknown {
  if (typeof text !== 'string') throw new UnreadableRow(`${what} is not JSON text`);
  try {
    return JSON.parse(text);
  } catch {
    throw new UnreadableRow(`${what} is not valid JSON: ${text.slice(0, 80)}`);
  }
}

/** A JSON column's value as Eunomia's API answered it (see the file's comment). */
function storedValue(text: unknown, what: string): unknown {
  const value = parsedJson(text, what);
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/** A rule's actions: the JSON text of a list, held in a JSON string. */
function storedActions(text: unknown): unknown {
  const value = parsedJson(text, 'actions');
  return typeof value === 'string' ? parsedJson(value, 'actions') : value;
}

/** SQLite's `YYYY-MM-DD HH:MM:SS[.ffffff]` (UTC) as ISO 8601 with its zone; `fallback` when unreadable. */
function isoTime(stored: unknown, fallback: string): string {
  const match = /^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d(?:\.\d+)?)$/.exec(String(stored));
  const time = match === null ? Number.NaN : Date.parse(`${match[1]}T${match[2]}Z`);
  return Number.isNaN(time) ? fallback : new Date(time).toISOString();
}

/** Adds `item` to the list of `key`, unless that list holds `most` items already. */
function appendBounded<T>(lists: Map<number, T[]>, key: number, item: T, most: number): void {
  const list = lists.get(key);
  if (list === undefined) lists.set(key, [item]);
  else if (list.length < most) list.push(item);
}

interface PolicyRow {
  id: number;
  version: string;
  name: string;
  description: string | null;
  default_effect: string;
}
interface RuleRow {
  id: number;
  policy_id: number;
  name: string;
  description: string | null;
  effect: string;
  actions: string;
}
interface ConditionRow {
  rule_id: number;
  entity_type: string;
  path: string;
  operator: string;
  value: string;
}
interface EntityRow {
  uri: string;
  type: string;
  registered_at: string;
}
interface AttributeRow {
  key: string;
  value: string;
  updated_at: string;
  registered_at: string;
}

/** Entities are read this many at a time, so that a large registry is never all in memory. */
const ENTITY_PAGE = 1000;

/** An Eunomia database opened read-only. */
export class EunomiaDatabase {
  private readonly db: Database.Database;

  /** Throws with a message naming the file when it is not there or not an SQLite database. */
  constructor(readonly path: string) {
    this.db = new Database(path, { readonly: true, fileMustExist: true });
    // Fails here, with SQLite's "file is not a database", rather than at the first read.
    this.db.prepare('SELECT count(*) FROM sqlite_master').get();
  }

  /** Whether the database has the table, which Eunomia creates only for what it was configured to keep. */
  hasTable(name: string): boolean {
    return this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
  }

  /**
   * Every policy in creation order, or why it cannot be read (the name, then the reason). Rules and
   * conditions are read in one pass each, and a policy keeps at most one rule more than `limits` allow
   * (a rule one condition more), enough for Verdict's refusal to say so: a database of a million rules
   * costs no more memory than the policies Verdict could take.
   */
  policies(limits: PolicyLimits): (EunomiaPolicy | { name: string; unreadable: string })[] {
    if (!this.hasTable('policies')) return [];
    const rulesOf = new Map<number, RuleRow[]>();
    const conditionsOf = new Map<number, ConditionRow[]>();
    if (this.hasTable('rules')) {
      const rules = this.db.prepare('SELECT id, policy_id, name, description, effect, actions FROM rules ORDER BY id').iterate() as IterableIterator<RuleRow>;
      for (const rule of rules) appendBounded(rulesOf, rule.policy_id, rule, limits.maxRulesPerPolicy + 1);
    }
    if (this.hasTable('conditions')) {
      const conditions = this.db.prepare('SELECT rule_id, entity_type, path, operator, value FROM conditions ORDER BY id').iterate() as IterableIterator<ConditionRow>;
      for (const condition of conditions) appendBounded(conditionsOf, condition.rule_id, condition, limits.maxConditionsPerRule + 1);
    }
    const rows = this.db.prepare('SELECT id, version, name, description, default_effect FROM policies ORDER BY id').all() as PolicyRow[];
    return rows.map((row) => {
      try {
        return {
          version: row.version,
          name: row.name,
          description: row.description,
          default_effect: enumMember(EFFECTS, row.default_effect, 'default effect'),
          rules: (rulesOf.get(row.id) ?? []).map((rule) => this.rule(rule, conditionsOf.get(rule.id) ?? [])),
        };
      } catch (error) {
        if (!(error instanceof UnreadableRow)) throw error;
        return { name: row.name, unreadable: error.message };
      }
    });
  }

  private rule(row: RuleRow, conditions: ConditionRow[]): EunomiaRule {
    const at = `rule '${row.name}'`;
    const condition = (stored: ConditionRow): EunomiaCondition => ({
      path: stored.path,
      operator: enumMember(OPERATORS, stored.operator, `${at}: operator`),
      value: storedValue(stored.value, `${at}: the value of the condition on ${stored.path}`),
    });
    const sided = conditions.map((stored) => ({ side: enumMember(SIDES, stored.entity_type, `${at}: condition side`), condition: condition(stored) }));
    const of = (side: string) => sided.filter((entry) => entry.side === side).map((entry) => entry.condition);
    return {
      name: row.name,
      description: row.description,
      effect: enumMember(EFFECTS, row.effect, `${at}: effect`),
      principal_conditions: of('principal'),
      resource_conditions: of('resource'),
      actions: storedActions(row.actions),
    };
  }

  /** The number of entities, for the report. */
  entityCount(): number {
    if (!this.hasTable('entities')) return 0;
    return (this.db.prepare('SELECT count(*) AS count FROM entities').get() as { count: number }).count;
  }

  /**
   * The entities in registration order, a page at a time; an entity that cannot be read comes as
   * its uri and why. `now` stands in for a time the database does not hold readably.
   */
  *entityPages(now: string): Generator<(EunomiaEntity | { uri: string; unreadable: string })[]> {
    if (!this.hasTable('entities')) return;
    const page = this.db.prepare('SELECT rowid, uri, type, registered_at FROM entities WHERE rowid > ? ORDER BY rowid LIMIT ?');
    const attributes = this.hasTable('attributes')
      ? this.db.prepare('SELECT key, value, updated_at, registered_at FROM attributes WHERE entity_uri = ? ORDER BY rowid')
      : undefined;
    let after = -Infinity;
    for (;;) {
      const rows = page.all(after, ENTITY_PAGE) as (EntityRow & { rowid: number })[];
      if (rows.length === 0) return;
      after = rows.at(-1)!.rowid;
      yield rows.map((row) => {
        try {
          return {
            uri: row.uri,
            type: enumMember(SIDES, row.type, 'type'),
            registeredAt: isoTime(row.registered_at, now),
            attributes: ((attributes?.all(row.uri) ?? []) as AttributeRow[]).map((attribute) => ({
              key: attribute.key,
              value: storedValue(attribute.value, `the value of attribute '${attribute.key}'`),
              updatedAt: isoTime(attribute.updated_at, now),
              registeredAt: isoTime(attribute.registered_at, now),
            })),
          };
        } catch (error) {
          if (!(error instanceof UnreadableRow)) throw error;
          return { uri: row.uri, unreadable: error.message };
        }
      });
    }
  }

  close(): void {
    this.db.close();
  }
}
