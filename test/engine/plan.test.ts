import t from 'tap';
import { Query } from 'mingo';
import { compile, evaluate, type ResolvedEntity } from '../../src/engine/index.js';
import { COARSE_REASON, plan, PlanTooLarge } from '../../src/engine/plan.js';
import { and, formatCondition, not, or, type ConditionTree } from '../../src/engine/condition-tree.js';
import { mongoFilter, mongoOptionIssue, type MongoFilterOptions } from '../../src/engine/mongodb-filter.js';
import type { Policy } from '../../src/schemas/policy.js';
import { cond, entity, policy, rule } from './helpers.js';
import { treeHolds } from '../helpers/plan-cases.js';

const IT_DESK = policy('it-desk', [
  rule('it-admins', { principal: [cond('==', 'it', 'attributes.department')], resource: [cond('==', 'laptop', 'attributes.kind')], actions: ['administer'] }),
]);
const ALICE = entity({ department: 'it' }, 'user:alice');

function planFor(policies: Policy[], principal: ResolvedEntity, action = 'access', known: ResolvedEntity = entity()) {
  return plan(compile(policies, 1), { principal, resource: known, action });
}

/** The documents a plan's MongoDB filter selects, by mingo. */
function selected(condition: ConditionTree, documents: Record<string, unknown>[], options?: MongoFilterOptions): Record<string, unknown>[] {
  const result = mongoFilter(condition, options);
  if (!('filter' in result)) throw new Error(result.unsupported);
  const query = new Query(result.filter, {});
  return documents.filter((document) => query.test(document));
}

t.test('with no rule for the principal, the default effects decide for every resource', async (t) => {
  t.same(planFor([], ALICE), { kind: 'always_denied', condition: false, reason: 'Action denied by default because there are no policies' });
  t.same(planFor([IT_DESK], ALICE, 'read'), { kind: 'always_denied', condition: false, reason: 'Action denied by default effect' });
  t.same(planFor([IT_DESK], entity({ department: 'hr' }), 'administer'), { kind: 'always_denied', condition: false, reason: 'Action denied by default effect' });
  const open = policy('open', [], 'allow');
  t.same(planFor([open], ALICE), { kind: 'always_allowed', condition: true, reason: 'Action allowed by default effect' });
  t.same(mongoFilter(true), { filter: {} });
  t.same(mongoFilter(false), { filter: { _id: { $in: [] } } });
});

t.test("the principal's conditions are decided; the resource's remain, with the operator's canonical spelling", async (t) => {
  const result = planFor([IT_DESK], ALICE, 'administer');
  t.same(result, {
    kind: 'conditional',
    condition: { path: 'attributes.kind', operator: '==', value: 'laptop' },
    reason: 'Allowed for the resources that satisfy the condition',
  });
  t.same(mongoFilter(result.condition), { filter: { 'attributes.kind': { $eq: 'laptop', $not: { $type: 'array' } } } });
  const synonyms = policy('p', [rule('r', { resource: [cond('equals', 1), cond('>', 2, 'attributes.y')] })]);
  t.same(planFor([synonyms], ALICE).condition, { and: [cond('==', 1), cond('gt', 2, 'attributes.y')] });
});

t.test('known resource attributes are decided like the principal', async (t) => {
  const rules = policy('p', [rule('r', { resource: [cond('==', 'laptop', 'attributes.kind'), cond('==', 'alice', 'attributes.owner')] })]);
  t.same(planFor([rules], ALICE, 'access', entity({ kind: 'laptop' })).condition, cond('==', 'alice', 'attributes.owner'));
  t.same(planFor([rules], ALICE, 'access', entity({ kind: 'phone' })).kind, 'always_denied');
  const nested = policy('p', [rule('r', { resource: [cond('==', 'x', 'attributes.address.city')] })]);
  t.same(planFor([nested], ALICE, 'access', entity({ address: { zip: 1 } })).kind, 'always_denied', 'a known attribute without the path: missing');
});

t.test('combining: a deny anywhere wins; within a policy only the first matching rule counts', async (t) => {
  const laptop = cond('==', 'laptop', 'attributes.kind');
  const bob = cond('==', 'bob', 'attributes.owner');
  const firstMatch = policy('p', [rule('allow-laptops', { resource: [laptop] }), rule('deny-bob', { effect: 'deny', resource: [bob] })]);
  const result = planFor([firstMatch], ALICE);
  const resources = [{ kind: 'laptop', owner: 'bob' }, { kind: 'phone', owner: 'bob' }, { kind: 'laptop' }, {}];
  t.same(
    resources.map((attributes) => treeHolds(result.condition, entity(attributes))),
    [true, false, true, false],
    "bob's laptop is allowed: the policy's first matching rule allows it",
  );
  const elsewhere = [policy('a', [rule('allow-laptops', { resource: [laptop] })]), policy('b', [rule('deny-bob', { effect: 'deny', resource: [bob] })])];
  t.same(
    resources.map((attributes) => treeHolds(planFor(elsewhere, ALICE).condition, entity(attributes))),
    [false, false, true, false],
    "bob's laptop is denied: another policy's deny rule wins",
  );
  const denyFirst = [policy('a', [rule('deny-all', { effect: 'deny' })]), policy('b', [rule('allow-all')])];
  t.same(planFor(denyFirst, ALICE), { kind: 'always_denied', condition: false, reason: 'Rule deny-all denied the action in policy a' });
  const shadowed = policy('p', [rule('allow-all'), rule('deny-all', { effect: 'deny' })]);
  t.same(planFor([shadowed], ALICE), { kind: 'always_allowed', condition: true, reason: 'Rule allow-all allowed the action in policy p' });
});

t.test('missing and mistyped attributes never match, also through the MongoDB filter', async (t) => {
  const documents = [
    { attributes: { owner: 'alice' } },
    { attributes: { owner: 'bob' } },
    { attributes: { owner: ['bob'] } },
    { attributes: { owner: null } },
    { attributes: {} },
    { attributes: { level: '5' } },
    { attributes: { level: [5] } },
    { attributes: { level: 5 } },
  ];
  const notAlice = planFor([policy('p', [rule('r', { resource: [cond('!=', 'alice', 'attributes.owner')] })])], ALICE).condition;
  t.same(selected(notAlice, documents), documents.slice(1, 4), '!= holds for other values and other types, never for a missing field');
  const atLeastFive = planFor([policy('p', [rule('r', { resource: [cond('gte', 5, 'attributes.level')] })])], ALICE).condition;
  t.same(selected(atLeastFive, documents), [{ attributes: { level: 5 } }], 'gte holds for numbers only, never for a list holding one');
});

t.test('values compare as JSON: embedded documents in any key order, lists exactly', async (t) => {
  const documents = [
    { attributes: { place: { city: 'x', zip: 1 } } },
    { attributes: { place: { zip: 1, city: 'x' } } },
    { attributes: { place: { city: 'x', zip: 1, extra: true } } },
    { attributes: { place: [{ city: 'x', zip: 1 }] } },
    { attributes: { tags: ['a', 'b'] } },
    { attributes: { tags: [['a', 'b']] } },
    { attributes: { tags: ['b', 'a'] } },
  ];
  const place = planFor([policy('p', [rule('r', { resource: [cond('==', { city: 'x', zip: 1 }, 'attributes.place')] })])], ALICE).condition;
  t.same(selected(place, documents), documents.slice(0, 2));
  const tags = planFor([policy('p', [rule('r', { resource: [cond('==', ['a', 'b'], 'attributes.tags')] })])], ALICE).condition;
  t.same(selected(tags, documents), [documents[4]]);
  const member = planFor([policy('p', [rule('r', { resource: [cond('contains', 'a', 'attributes.tags')] })])], ALICE).condition;
  t.same(selected(member, documents), [documents[4], documents[6]], 'contains on a list: membership, not of nested lists');
});

t.test('paths into lists and keys MongoDB reads specially go through $expr', async (t) => {
  const documents = [
    { attributes: { tags: ['a'] } },
    { attributes: { tags: { 0: 'a' } } },
    { attributes: { tags: [{ 0: 'a' }] } },
    { attributes: { $x: 'a' } },
    { attributes: { 0: 'a' } },
  ];
  const first = planFor([policy('p', [rule('r', { resource: [cond('==', 'a', 'attributes.tags.0')] })])], ALICE).condition;
  t.same(selected(first, documents), documents.slice(0, 2), 'position 0 of a list or key "0" of a document, as the engine reads it');
  t.match(mongoFilter(first), { filter: { $expr: {} } });
  for (const path of ['attributes.$x', 'attributes.0']) {
    const condition = planFor([policy('p', [rule('r', { resource: [cond('==', 'a', path)] })])], ALICE).condition;
    t.same(selected(condition, documents).length, 1, path);
  }
});

t.test('startswith and endswith are literal, and endswith means the very end', async (t) => {
  const documents = [{ attributes: { name: 'a.b' } }, { attributes: { name: 'axb' } }, { attributes: { name: 'a.b\n' } }, { attributes: { name: ['a.b'] } }];
  const suffix = planFor([policy('p', [rule('r', { resource: [cond('endswith', '.b', 'attributes.name')] })])], ALICE).condition;
  t.same(selected(suffix, documents), [documents[0]]);
  // MongoDB's PCRE would read a trailing `$` as "at the end or before a final newline" (JavaScript's,
  // and so mingo's, would not): the end is asserted with a lookahead both read alike.
  t.same(mongoFilter(suffix), { filter: { 'attributes.name': { $regex: '\\.b(?![\\s\\S])', $not: { $type: 'array' } } } });
  const prefix = planFor([policy('p', [rule('r', { resource: [cond('startswith', 'a.', 'attributes.name')] })])], ALICE).condition;
  t.same(selected(prefix, documents), [documents[0], documents[2]]);
});

t.test('the field prefix and the uri field place the resource in the document', async (t) => {
  const condition = and([cond('==', 'laptop', 'attributes.kind'), cond('startswith', 'doc:', 'uri')]);
  const documents = [{ kind: 'laptop', _id: 'doc:1' }, { kind: 'laptop', _id: 'x' }, { attributes: { kind: 'laptop' }, _id: 'doc:2' }];
  t.same(selected(condition, documents, { attributesPrefix: '', uriField: '_id' }), [documents[0]]);
  t.same(mongoFilter(cond('==', 1, 'attributes.a.b'), { attributesPrefix: 'meta.', uriField: 'uri' }), {
    filter: { 'meta.a': { $not: { $type: 'array' } }, 'meta.a.b': { $eq: 1, $not: { $type: 'array' } } },
  });
  t.equal(mongoOptionIssue('attributesPrefix', 'attributes.'), undefined);
  t.equal(mongoOptionIssue('attributesPrefix', ''), undefined);
  t.match(mongoOptionIssue('attributesPrefix', 'attributes'), /followed by a dot/);
  t.match(mongoOptionIssue('attributesPrefix', '$a.'), /followed by a dot/);
  t.match(mongoOptionIssue('uriField', 'a.0'), /field path/);
  t.equal(mongoOptionIssue('uriField', '_id'), undefined);
});

t.test('no filter rather than a wrong one: the reason names the condition', async (t) => {
  const lone = cond('==', 'a\ud800', 'attributes.name');
  const result = mongoFilter(and([cond('==', 1, 'attributes.x'), lone]));
  t.same(result, { unsupported: 'condition attributes.name == "a\\ud800" holds text that is not valid Unicode (a lone surrogate), which MongoDB cannot store' });
  let deep: unknown = 1;
  for (let level = 0; level < 40; level++) deep = { k: deep };
  const tooDeep = mongoFilter(or([cond('==', 1, 'attributes.x'), cond('==', deep, 'attributes.y')]));
  t.match(tooDeep, { unsupported: /^the filter would nest \d+ levels deep, beyond MongoDB's 100 \(condition attributes\.y == \{"k"/ });
});

t.test('the tree is simplified as its grammar promises', async (t) => {
  const x = cond('==', 1);
  const y = cond('==', 2, 'attributes.y');
  t.same(and([x, true, and([y, x])]), { and: [x, y] }, 'true dropped, nested and flattened, duplicates dropped');
  t.equal(and([x, not(x)]), false);
  t.equal(or([x, not(x)]), true);
  t.equal(or([x, true]), true);
  t.same(not(not(x)), x);
  t.same(
    or([cond('==', 'a', 'uri'), y, cond('in', ['b', 'a'], 'uri'), cond('==', 3, 'attributes.y')]),
    { or: [cond('in', ['a', 'b'], 'uri'), cond('in', [2, 3], 'attributes.y')] },
    'in an or, == and in on one path become one in',
  );
  t.same(or([cond('==', 1), cond('==', 2)]), cond('in', [1, 2]));
  t.strictSame(or([x, cond('==', 1), x]), x, 'a comparison said twice is said once, not as an in');
  t.equal(or([cond('==', 1), cond('in', [2, 3]), not(cond('in', [2, 3]))]), true, 'a member of a merged in beside its negation decides the or');
  t.equal(or([not(cond('==', 2)), cond('==', 1), cond('==', 2)]), true, 'whichever comes first');
  t.equal(formatCondition(and([x, not(or([y, cond('in', ['a'], 'uri')]))])), 'attributes.x == 1 and not (attributes.y == 2 or uri in ["a"])');
});

t.test('the engine decides what the plan says, resource by resource', async (t) => {
  const policies = [
    policy('a', [rule('allow-it', { principal: [cond('==', 'it', 'attributes.department')], resource: [cond('in', ['laptop', 'phone'], 'attributes.kind')] })]),
    policy('b', [rule('deny-retired', { effect: 'deny', resource: [cond('==', true, 'attributes.retired')] })], 'allow'),
  ];
  const snapshot = compile(policies, 1);
  const result = plan(snapshot, { principal: ALICE, resource: entity(), action: 'access' });
  const resources = [{ kind: 'laptop' }, { kind: 'laptop', retired: true }, { kind: 'desk' }, { retired: 'yes' }, {}];
  for (const attributes of resources) {
    const decided = evaluate(snapshot, { principal: ALICE, resource: entity(attributes), action: 'access' }).allowed;
    t.equal(treeHolds(result.condition, entity(attributes)), decided, JSON.stringify(attributes));
  }
});

/** The principal's attributes, counting how often a plan reads them. */
class CountedAttributes extends Map<string, unknown> {
  reads = 0;
  override get(key: string) {
    this.reads++;
    return super.get(key);
  }
  override has(key: string) {
    this.reads++;
    return super.has(key);
  }
}

t.test("a plan looks only at the rules whose principal conditions can hold (counting reads of the principal's attributes)", async (t) => {
  /** `teams` policies, each granting its own team one document; beside them, a rule for seniors and one denial for everyone. */
  const perTeam = (teams: number) => [
    ...Array.from({ length: teams }, (_, team) =>
      policy(`team-${team}`, [
        rule('grant', { principal: [cond('==', `team-${team}`, 'attributes.team')], resource: [cond('==', `doc-${team}`, 'attributes.id')], actions: ['read'] }),
      ]),
    ),
    policy('seniors', [rule('grant', { principal: [cond('gte', 5, 'attributes.level')], resource: [cond('==', 'handbook', 'attributes.id')], actions: ['read'] })]),
    policy('embargo', [rule('deny', { effect: 'deny', resource: [cond('==', true, 'attributes.embargoed')], actions: ['read'] })]),
  ];
  const readsFor = (teams: number) => {
    const attributes = new CountedAttributes([['team', 'team-7'], ['level', 6]]);
    const result = plan(compile(perTeam(teams), 1), { principal: { uri: undefined, attributes }, resource: entity(), action: 'read' });
    t.same(result.condition, { and: [{ not: cond('==', true, 'attributes.embargoed') }, cond('in', ['doc-7', 'handbook'], 'attributes.id')] }, `${teams} teams: the plan`);
    return attributes.reads;
  };
  t.equal(readsFor(10_000), readsFor(10), "the principal is read as often among 10,000 teams' policies as among 10");
});

t.test('deny rules after allow rules of their policy are stated once, beside one negated or of those allow rules', async (t) => {
  const grants = Array.from({ length: 300 }, (_, index) => rule(`grant-${index}`, { resource: [cond('==', `user-${index}`, 'attributes.owner')] }));
  const denials = Array.from({ length: 30 }, (_, index) => rule(`denial-${index}`, { effect: 'deny', resource: [cond('==', true, `attributes.flag${index}`)] }));
  const result = planFor([policy('p', [...grants, ...denials])], ALICE);
  const owners = cond('in', grants.map((_, index) => `user-${index}`), 'attributes.owner');
  const flags = denials.map((_, index) => cond('==', true, `attributes.flag${index}`));
  t.same(result, {
    kind: 'conditional',
    condition: { and: [{ not: { and: [{ or: flags }, { not: owners }] } }, owners] },
    reason: 'Allowed for the resources that satisfy the condition',
  }, "300 allow rules and 30 deny rules: each said once (the product of the two made 2 MB of a plan's answer)");
});

t.test('a plan over its length budget: deny runs lose their exemptions (denying more, never less) and say so; past that, refused', async (t) => {
  // Allow and deny rules alternate: each deny rule is exempted by every allow rule before it.
  const alternating = policy('p', Array.from({ length: 40 }, (_, index) => [
    rule(`grant-${index}`, { resource: [cond('==', `user-${index}`, `attributes.owner${index}`)] }),
    rule(`denial-${index}`, { effect: 'deny', resource: [cond('==', true, `attributes.flag${index}`)] }),
  ]).flat());
  const snapshot = compile([alternating], 1);
  const request = { principal: ALICE, resource: entity(), action: 'access' };
  const exact = plan(snapshot, request);
  const exactLength = JSON.stringify(exact.condition).length;
  t.equal(exact.exact, undefined, 'without a budget, exact');
  t.same(plan(snapshot, request, exactLength + 64), exact, 'a budget with room for it changes nothing');

  const coarse = plan(snapshot, request, Math.round(exactLength / 3));
  t.equal(coarse.exact, false);
  t.equal(coarse.kind, 'conditional');
  t.ok(JSON.stringify(coarse.condition).length <= exactLength / 3, 'within the budget');
  t.match(coarse.reason, /^Allowed for the resources that satisfy the condition, but not all of them: the exact plan is too large; some deny rules are stated without/);
  const grantedAndFlagged = entity({ owner0: 'user-0', flag39: true });
  t.equal(evaluate(snapshot, { ...request, resource: grantedAndFlagged }).allowed, true, 'user-0 with flag39: allowed, grant-0 is its first matching rule');
  t.equal(treeHolds(exact.condition, grantedAndFlagged), true, 'the exact plan says so');
  t.equal(treeHolds(coarse.condition, grantedAndFlagged), false, 'the coarse plan leaves it out');
  t.equal(treeHolds(coarse.condition, entity({ owner0: 'user-0' })), true, 'and keeps what no deny rule touches');

  const denyingEverything = policy('q', [rule('grant', { resource: [cond('==', 'x', 'attributes.owner')] }), rule('deny-all', { effect: 'deny' })]);
  const nothingKnown = plan(compile([denyingEverything], 1), request, 100);
  t.same(nothingKnown, {
    kind: 'always_denied',
    condition: false,
    exact: false,
    reason: `No resource is known to be allowed: the exact plan is too large; ${COARSE_REASON}`,
  }, 'an unconditional deny without its exemption: nothing is known to be allowed, and the plan says it is not exact');

  t.throws(() => plan(snapshot, request, 200), new PlanTooLarge(200), 'the rules alone do not fit: refused');
  t.same(plan(compile([policy('d', [rule('deny-all', { effect: 'deny' })]), alternating], 1), request, 40).kind, 'always_denied', 'a deny rule that denies everything answers whatever the budget');
});
