import type { Policy } from '../../schemas/policy.js';
import { jsonEqual } from '../../engine/json-equal.js';
import { SCHEMAS_CHANGE, type LoadedPolicies, type LoadedPolicyChanges, type PolicyReads, type PolicyWrites, type PromoteOutcome } from '../store.js';
import { DuplicateKeyError, type CheckedAgainst } from '../errors.js';
import type { Writer } from '../../audit/record.js';
import { isUniqueViolation } from './database.js';
import type { EmbeddedWrites } from './writes.js';
import type { EmbeddedChangeFeed } from './change-feed.js';

interface StoredPolicyRow {
  position: number;
  document: string;
}

/** The policies in the embedded store: a row each, in creation order by their position. */
export class EmbeddedPolicies implements PolicyReads, PolicyWrites {
  private readonly statements;

  constructor(
    private readonly writes: EmbeddedWrites,
    private readonly feed: EmbeddedChangeFeed,
  ) {
    const { db } = writes;
    this.statements = {
      policyRevision: db.prepare(`SELECT revision FROM revisions WHERE collection = 'policies'`).pluck(),
      allPolicies: db.prepare('SELECT position, document FROM policies ORDER BY position'),
      policy: db.prepare('SELECT document FROM policies WHERE name = ?').pluck(),
      storedPolicy: db.prepare('SELECT position, document FROM policies WHERE name = ?'),
      policyChangesAfter: db.prepare('SELECT DISTINCT name FROM policy_changes WHERE revision > ?').pluck(),
      policyChangesCount: db.prepare('SELECT count(*) FROM policy_changes WHERE revision > ?').pluck(),
      insertPolicy: db.prepare('INSERT INTO policies (name, document) VALUES (?, ?)'),
      updatePolicy: db.prepare('UPDATE policies SET document = ? WHERE name = ?'),
      deletePolicy: db.prepare('DELETE FROM policies WHERE name = ?'),
    };
  }

  loadPolicies(): Promise<LoadedPolicies>;
  loadPolicies(since: number): Promise<LoadedPolicyChanges>;
  async loadPolicies(since?: number): Promise<LoadedPolicyChanges> {
    return this.writes.db.transaction((): LoadedPolicyChanges => {
      const revision = this.statements.policyRevision.get() as number;
      if (since !== undefined && since <= revision) {
        // Complete only when every revision since has its row: the log is trimmed, and revisions before migration 5 have none.
        if ((this.statements.policyChangesCount.get(since) as number) === revision - since) {
          const names = this.statements.policyChangesAfter.all(since) as string[];
          // A schema document written since changes what every policy is held to: the whole set is loaded, with it.
          if (!names.includes(SCHEMAS_CHANGE)) return { revision, changes: names.map((name) => ({ name, now: this.storedPolicy(name) ?? null })) };
        }
      }
      const rows = this.statements.allPolicies.all() as StoredPolicyRow[];
      const schemas = this.writes.readSchemas();
      return {
        revision,
        ...(schemas && { schemas }),
        policies: rows.map((row) => JSON.parse(row.document) as Policy),
        positions: rows.map((row) => row.position),
        feedPosition: this.feed.position(),
      };
    })();
  }

  private storedPolicy(name: string): { policy: Policy; position: number } | undefined {
    const row = this.statements.storedPolicy.get(name) as StoredPolicyRow | undefined;
    return row === undefined ? undefined : { policy: JSON.parse(row.document) as Policy, position: row.position };
  }

  private readPolicy(name: string): Policy | undefined {
    const document = this.statements.policy.get(name) as string | undefined;
    return document === undefined ? undefined : (JSON.parse(document) as Policy);
  }

  async policyRevision(): Promise<number> {
    return this.statements.policyRevision.get() as number;
  }

  async getPolicy(name: string): Promise<Policy | undefined> {
    return this.readPolicy(name);
  }

  async createPolicy(policy: Policy, by: Writer, checked?: CheckedAgainst): Promise<void> {
    this.writes.write(() => {
      try {
        this.statements.insertPolicy.run(policy.name, JSON.stringify(policy));
      } catch (error) {
        if (isUniqueViolation(error)) throw new DuplicateKeyError(`Policy '${policy.name}' already exists`);
        throw error;
      }
      this.writes.recordPolicyWrite(by, { operation: 'policy.create', name: policy.name, before: null, after: policy });
    }, checked);
  }

  async replacePolicy(policy: Policy, by: Writer, checked?: CheckedAgainst): Promise<boolean> {
    return this.writes.write(() => {
      const before = this.readPolicy(policy.name);
      if (before === undefined) return false;
      this.statements.updatePolicy.run(JSON.stringify(policy), policy.name);
      this.writes.recordPolicyWrite(by, { operation: 'policy.replace', name: policy.name, before, after: policy });
      return true;
    }, checked);
  }

  async deletePolicy(name: string, by: Writer): Promise<boolean> {
    return this.writes.write(() => {
      const before = this.readPolicy(name);
      if (before === undefined) return false;
      this.statements.deletePolicy.run(name);
      this.writes.recordPolicyWrite(by, { operation: 'policy.delete', name, before, after: null });
      return true;
    });
  }

  async promotePolicy(promoted: Policy, shadowName: string, shadowAsRead: Policy, by: Writer, checked?: CheckedAgainst): Promise<PromoteOutcome> {
    return this.writes.write((): PromoteOutcome => {
      const [before, shadow] = [this.readPolicy(promoted.name), this.readPolicy(shadowName)];
      if (before === undefined || shadow === undefined) return 'gone';
      if (!jsonEqual(shadow, shadowAsRead)) return 'changed';
      this.statements.updatePolicy.run(JSON.stringify(promoted), promoted.name);
      this.writes.recordPolicyWrite(by, { operation: 'policy.replace', name: promoted.name, before, after: promoted });
      if (shadowName === promoted.name) return 'promoted';
      this.statements.deletePolicy.run(shadowName);
      this.writes.recordPolicyWrite(by, { operation: 'policy.delete', name: shadowName, before: shadow, after: null });
      return 'promoted';
    }, checked);
  }

  async restorePolicy(policy: Policy, version: number, by: Writer, checked?: CheckedAgainst): Promise<void> {
    this.writes.write(() => {
      const before = this.readPolicy(policy.name);
      if (before === undefined) this.statements.insertPolicy.run(policy.name, JSON.stringify(policy));
      else this.statements.updatePolicy.run(JSON.stringify(policy), policy.name);
      this.writes.recordPolicyWrite(by, { operation: 'policy.restore', name: policy.name, before: before ?? null, after: policy, restoredFrom: version });
    }, checked);
  }
}
