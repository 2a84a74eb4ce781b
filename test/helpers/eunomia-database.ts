import Database from 'better-sqlite3';

/**
 * An Eunomia 0.3.10 database written as Eunomia writes it, for `verdict import eunomia` to read.
 * The DDL is what SQLAlchemy's `create_all` makes of Eunomia's models on SQLite (engine/db/models.py
 * and fetchers/registry/db/models.py): enums as VARCHAR of their longest member name, JSON columns,
 * times defaulting to CURRENT_TIMESTAMP. Rows are inserted as Eunomia's crud functions insert them:
 * enum member names, and `json.dumps(value)` (a string) stored in a JSON column, so JSON in a JSON string.
 */
const DDL = `
CREATE TABLE policies (
	id INTEGER NOT NULL,
	version VARCHAR NOT NULL,
	name VARCHAR NOT NULL,
	description VARCHAR,
	default_effect VARCHAR(5) NOT NULL,
	registered_at DATETIME DEFAULT (CURRENT_TIMESTAMP) NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (name)
);
CREATE TABLE rules (
	id INTEGER NOT NULL,
	name VARCHAR NOT NULL,
	description VARCHAR,
	policy_id INTEGER NOT NULL,
	effect VARCHAR(5) NOT NULL,
	actions JSON NOT NULL,
	registered_at DATETIME DEFAULT (CURRENT_TIMESTAMP) NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(policy_id) REFERENCES policies (id)
);
CREATE TABLE conditions (
	id INTEGER NOT NULL,
	rule_id INTEGER NOT NULL,
	entity_type VARCHAR(9) NOT NULL,
	path VARCHAR NOT NULL,
	operator VARCHAR(16) NOT NULL,
	value JSON NOT NULL,
	registered_at DATETIME DEFAULT (CURRENT_TIMESTAMP) NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(rule_id) REFERENCES rules (id)
);
CREATE TABLE entities (
	uri VARCHAR NOT NULL,
	type VARCHAR(9) NOT NULL,
	registered_at DATETIME DEFAULT (CURRENT_TIMESTAMP) NOT NULL,
	PRIMARY KEY (uri)
);
CREATE TABLE attributes (
	entity_uri VARCHAR NOT NULL,
	"key" VARCHAR NOT NULL,
	value JSON NOT NULL,
	updated_at DATETIME DEFAULT (CURRENT_TIMESTAMP) NOT NULL,
	registered_at DATETIME DEFAULT (CURRENT_TIMESTAMP) NOT NULL,
	PRIMARY KEY (entity_uri, "key"),
	FOREIGN KEY(entity_uri) REFERENCES entities (uri)
);
`;

/** Python's json.dumps with its defaults: `, ` and `: ` between items, non-ASCII escaped. */
export function pythonJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([key, item]) => `${pythonJson(key)}: ${pythonJson(item)}`).join(', ')}}`;
  }
  return JSON.stringify(value).replace(/[\u0080-\uffff]/g, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** What Eunomia's crud stores in a JSON column: json.dumps of the value, itself serialized as JSON. */
const eunomiaJson = (value: unknown) => pythonJson(pythonJson(value));

const OPERATOR_NAMES: Record<string, string> = {
  equals: 'EQUALS', not_equals: 'NOT_EQUALS', contains: 'CONTAINS', not_contains: 'NOT_CONTAINS',
  startswith: 'STARTS_WITH', endswith: 'ENDS_WITH', gt: 'GREATER', gte: 'GREATER_OR_EQUAL',
  lt: 'LESS', lte: 'LESS_OR_EQUAL', in: 'IN', not_in: 'NOT_IN',
};

export interface EunomiaPolicyRows {
  name: string;
  version?: string;
  description?: string | null;
  default_effect?: 'allow' | 'deny';
  rules: {
    name: string;
    description?: string | null;
    effect: 'allow' | 'deny';
    actions: string[];
    principal_conditions?: { path: string; operator: string; value: unknown }[];
    resource_conditions?: { path: string; operator: string; value: unknown }[];
  }[];
}

export class EunomiaDatabaseFile {
  readonly db: Database.Database;

  constructor(readonly path: string) {
    this.db = new Database(path);
    this.db.exec(DDL);
  }

  /** As `crud.create_policy` stores a policy (names already slugified, as Eunomia's schemas make them). */
  addPolicy(policy: EunomiaPolicyRows): void {
    const policyId = this.db
      .prepare('INSERT INTO policies (version, name, description, default_effect) VALUES (?, ?, ?, ?)')
      .run(policy.version ?? '1.0', policy.name, policy.description ?? null, (policy.default_effect ?? 'deny').toUpperCase()).lastInsertRowid;
    for (const rule of policy.rules) {
      const ruleId = this.db
        .prepare('INSERT INTO rules (name, description, policy_id, effect, actions) VALUES (?, ?, ?, ?, ?)')
        .run(rule.name, rule.description ?? null, policyId, rule.effect.toUpperCase(), eunomiaJson(rule.actions)).lastInsertRowid;
      for (const side of ['principal', 'resource'] as const) {
        for (const condition of rule[`${side}_conditions`] ?? []) {
          this.db
            .prepare('INSERT INTO conditions (rule_id, entity_type, path, operator, value) VALUES (?, ?, ?, ?, ?)')
            .run(ruleId, side, condition.path, OPERATOR_NAMES[condition.operator] ?? condition.operator, eunomiaJson(condition.value));
        }
      }
    }
  }

  /** As `crud.create_entity` stores an entity. */
  addEntity(uri: string, type: string, attributes: Record<string, unknown>, registeredAt?: string): void {
    this.db.prepare('INSERT INTO entities (uri, type, registered_at) VALUES (?, ?, coalesce(?, CURRENT_TIMESTAMP))').run(uri, type, registeredAt ?? null);
    for (const [key, value] of Object.entries(attributes)) {
      this.db.prepare('INSERT INTO attributes (entity_uri, "key", value) VALUES (?, ?, ?)').run(uri, key, eunomiaJson(value));
    }
  }

  /** As `crud.update_entity_attributes` stores a new value for an existing key: the value itself as JSON, without json.dumps. */
  updateAttribute(uri: string, key: string, value: unknown): void {
    this.db.prepare('UPDATE attributes SET value = ?, updated_at = CURRENT_TIMESTAMP WHERE entity_uri = ? AND "key" = ?').run(pythonJson(value), uri, key);
  }

  close(): void {
    this.db.close();
  }
}
