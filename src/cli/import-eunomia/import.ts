import { isDeepStrictEqual } from 'node:util';
import type { FastifySchemaValidationError } from 'fastify';
import { PolicySetReader } from '../../policy-files/policy-set.js';
import { policyAnswer } from '../../services/policies.js';
import type { PolicyLimits } from '../../engine/index.js';
import { storableValueIssues } from '../../engine/value-limits.js';
import { entityCreateSchema, type Entity } from '../../schemas/entity.js';
import type { Policy } from '../../schemas/policy.js';
import { issuesInOneLine } from '../../schemas/errors.js';
import { compileListingErrors, validationIssues } from '../../schemas/validation.js';
import type { Store } from '../../store/store.js';
import { DuplicateKeyError } from '../../store/errors.js';
import type { Writer } from '../../audit/record.js';
import type { EunomiaDatabase, EunomiaEntity, EunomiaPolicy } from './database.js';

/** Entity problems listed one by one; past this many, only their number. */
const MAX_LISTED_ENTITY_PROBLEMS = 100;

export interface ImportCounts {
  imported: number;
  /** Already in Verdict exactly as in Eunomia (an earlier import, most likely): left as they are. */
  unchanged: number;
  /** Not imported; each has a line in the report saying why. */
  refused: number;
}

export interface ImportResult {
  policies: ImportCounts;
  entities: ImportCounts;
}

const noCounts = (): ImportCounts => ({ imported: 0, unchanged: 0, refused: 0 });

/** Where Verdict decides differently from Eunomia on the same policy (see docs/migrating-from-eunomia.md). */
function decisionNotes(policy: Policy): string[] {
  const notes: string[] = [];
  const orderings = new Set(
    policy.rules.flatMap((rule) => [...rule.principal_conditions, ...rule.resource_conditions]).flatMap((item) => ('operator' in item ? [item.operator] : [])).filter((operator) => ['gt', 'gte', 'lt', 'lte'].includes(operator)),
  );
  if (orderings.size > 0) {
    notes.push(`uses ${[...orderings].join(', ')}, which Eunomia evaluated the other way round: Verdict's gt holds when the attribute is greater than the value`);
  }
  if (policy.default_effect === 'allow') notes.push('has default_effect allow, which Eunomia ignored and Verdict applies');
  return notes;
}

/**
 * Writes the policies and entities of an Eunomia database into Verdict's store, through the store's
 * writes (each with its audit record by `by`), in Eunomia's creation order, after validating each as
 * the API would. What is already in Verdict is never changed: the same policy or entity counts as
 * unchanged, a different one of the same name or uri is reported and left as Verdict has it.
 * `print` hears one line per imported policy and per problem, and progress through the entities.
 */
export async function importEunomia(database: EunomiaDatabase, store: Store, limits: PolicyLimits, by: Writer, print: (line: string) => void): Promise<ImportResult> {
  return {
    policies: await importPolicies(database.policies(limits), store, limits, by, print),
    entities: await importEntities(database, store, by, print),
  };
}

async function importPolicies(
  policies: ReturnType<EunomiaDatabase['policies']>,
  store: Store,
  limits: PolicyLimits,
  by: Writer,
  print: (line: string) => void,
): Promise<ImportCounts> {
  const counts = noCounts();
  const reader = new PolicySetReader(limits);
  const refuse = (name: string, why: string) => {
    counts.refused++;
    print(`policy '${name}' not imported: ${why}`);
  };
  for (const eunomia of policies) {
    if ('unreadable' in eunomia) {
      refuse(eunomia.name, eunomia.unreadable);
      continue;
    }
    const read = reader.read([eunomia satisfies EunomiaPolicy], () => []);
    if ('issues' in read) {
      refuse(eunomia.name, `Verdict refuses it: ${issuesInOneLine(read.issues)}`);
      continue;
    }
    const policy = read.policies[0]!;
    const stored = await store.getPolicy(policy.name);
    if (stored !== undefined) {
      if (isDeepStrictEqual(policyAnswer(stored, 'spec'), policyAnswer(policy, 'spec'))) counts.unchanged++;
      else refuse(policy.name, "Verdict has a different policy of that name, which was kept (to take Eunomia's, delete Verdict's and import again)");
      continue;
    }
    try {
      await store.createPolicy(policy, by);
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error;
      refuse(policy.name, 'created in Verdict by someone else while this import ran, and kept');
      continue;
    }
    counts.imported++;
    print(`imported policy '${policy.name}' (${policy.rules.length} ${policy.rules.length === 1 ? 'rule' : 'rules'})`);
    for (const note of decisionNotes(policy)) print(`  note: '${policy.name}' ${note}`);
  }
  return counts;
}

const matchesEntitySchema = compileListingErrors<unknown>(entityCreateSchema);

/** The entity as Verdict registers it, with Eunomia's times, or why Verdict refuses it. */
function verdictEntity(eunomia: EunomiaEntity): Entity | string {
  const body = { uri: eunomia.uri, type: eunomia.type, attributes: eunomia.attributes.map(({ key, value }) => ({ key, value })) };
  const issues = matchesEntitySchema(body)
    ? eunomia.attributes.flatMap(({ key, value }) => storableValueIssues(value, ['attributes', key]))
    : validationIssues(matchesEntitySchema.errors as FastifySchemaValidationError[], 'body').map((issue) => ({ ...issue, loc: issue.loc.slice(1) }));
  if (issues.length > 0) return `Verdict refuses it: ${issuesInOneLine(issues)}`;
  return {
    uri: eunomia.uri,
    type: eunomia.type,
    attributes: eunomia.attributes.map(({ key, value, updatedAt, registeredAt }) => ({ key, value, updated_at: updatedAt, registered_at: registeredAt })),
    registered_at: eunomia.registeredAt,
  };
}

/** Type and attribute values, whatever the order of the attributes and their times. */
const sameEntity = (a: Entity, b: Entity) =>
  a.type === b.type &&
  isDeepStrictEqual(new Map(a.attributes.map(({ key, value }) => [key, value])), new Map(b.attributes.map(({ key, value }) => [key, value])));

async function importEntities(database: EunomiaDatabase, store: Store, by: Writer, print: (line: string) => void): Promise<ImportCounts> {
  const counts = noCounts();
  const refuse = (uri: string, why: string) => {
    counts.refused++;
    if (counts.refused <= MAX_LISTED_ENTITY_PROBLEMS) print(`entity '${uri}' not imported: ${why}`);
  };
  const total = database.entityCount();
  for (const page of database.entityPages(new Date().toISOString())) {
    const fresh: Entity[] = [];
    for (const eunomia of page) {
      if ('unreadable' in eunomia) {
        refuse(eunomia.uri, eunomia.unreadable);
        continue;
      }
      const entity = verdictEntity(eunomia);
      if (typeof entity === 'string') {
        refuse(eunomia.uri, entity);
        continue;
      }
      const stored = await store.getEntity(entity.uri);
      if (stored === undefined) fresh.push(entity);
      else if (sameEntity(stored, entity)) counts.unchanged++;
      else refuse(entity.uri, "Verdict has a different entity of that uri, which was kept (to take Eunomia's, delete Verdict's and import again)");
    }
    await createEntities(fresh, store, by, counts, refuse);
    if (total > page.length) print(`entities: ${counts.imported + counts.unchanged + counts.refused} of ${total} read`);
  }
  if (counts.refused > MAX_LISTED_ENTITY_PROBLEMS) print(`... and ${counts.refused - MAX_LISTED_ENTITY_PROBLEMS} more entities not imported`);
  return counts;
}

/** All in one transaction; should another writer register one of them meanwhile, one at a time. */
async function createEntities(entities: Entity[], store: Store, by: Writer, counts: ImportCounts, refuse: (uri: string, why: string) => void): Promise<void> {
  if (entities.length === 0) return;
  try {
    await store.createEntities(entities, by);
    counts.imported += entities.length;
    return;
  } catch (error) {
    if (!(error instanceof DuplicateKeyError)) throw error;
  }
  for (const entity of entities) {
    try {
      await store.createEntity(entity, by);
      counts.imported++;
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error;
      refuse(entity.uri, 'registered in Verdict by someone else while this import ran, and kept');
    }
  }
}
