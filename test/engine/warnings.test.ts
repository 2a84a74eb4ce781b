import t from 'tap';
import fc from 'fast-check';
import { compile, evaluate, policyWarnings, reportWarnings } from '../../src/engine/index.js';
import { MAX_OMISSION_WARNINGS } from '../../src/engine/warnings/omissions.js';
import { withinEdits } from '../../src/engine/warnings/typos.js';
import type { Condition, Operator, Policy } from '../../src/schemas/policy.js';
import { cond, entity, policy, request, rule } from './helpers.js';

const warningsOf = (policies: Policy[], checked = policies.map((_, index) => index)) =>
  policyWarnings(policies, checked, (index) => ['body', index]).map(({ loc, type, msg }) => ({ loc: loc.join('.'), type, msg }));

const oneRule = (principal: Condition[]) => [policy('p', [rule('r', { principal })])];

/** Values a probe tries for attribute x: numbers around the bounds used above, strings, lists. */
const PROBES: unknown[] = [
  ...Array.from({ length: 41 }, (_, index) => index / 2 - 5),
  5.25, 5.75, 'a', 'b', 'ab', '', 3, '3', true, null, ['a'], ['a', 'b'], {},
];

t.test('rules that can never match: conditions on one path no value satisfies together', async (t) => {
  const never: [string, Condition[], string][] = [
    ['two equalities', [cond('==', 'a'), cond('==', 'b')], 'no value of attributes.x satisfies attributes.x == "a" and attributes.x == "b"'],
    ['equality and its negation (synonyms)', [cond('equals', 3), cond('not_equals', 3)], 'no value of attributes.x satisfies attributes.x equals 3 and attributes.x not_equals 3'],
    ['in and not_in', [cond('in', ['a', 'b']), cond('not_in', ['b', 'a'])], 'no value of attributes.x satisfies attributes.x in ["a","b"] and attributes.x not_in ["b","a"]'],
    ['an empty in', [cond('in', [])], 'attributes.x in [] holds for no value'],
    ['disjoint ranges', [cond('gt', 10), cond('lt', 5)], 'no value of attributes.x satisfies attributes.x gt 10 and attributes.x lt 5'],
    ['a single point removed', [cond('>=', 5), cond('<=', 5), cond('!=', 5)], 'no value of attributes.x satisfies attributes.x >= 5 and attributes.x <= 5 and attributes.x != 5'],
    ['a number and a string test', [cond('gte', 1), cond('startswith', 'a')], 'no value of attributes.x satisfies attributes.x gte 1 and attributes.x startswith "a"'],
    ['equality outside a range', [cond('==', 4), cond('gt', 4)], 'no value of attributes.x satisfies attributes.x == 4 and attributes.x gt 4'],
  ];
  for (const [name, conditions, why] of never) {
    t.same(warningsOf(oneRule(conditions)), [{ loc: 'body.0.rules.0.principal_conditions', type: 'never_matches', msg: `this rule can never match: ${why}` }], name);
    const snapshot = compile(oneRule(conditions), 1);
    t.notOk(PROBES.some((value) => evaluate(snapshot, request(entity({ x: value }))).allowed), `${name}: indeed no probe value matches`);
  }
  const satisfiable: [string, Condition[]][] = [
    ['an open interval with a hole', [cond('gt', 5), cond('lt', 6), cond('!=', 5.5)]],
    ['a range', [cond('gte', 1), cond('lte', 1)]],
    ['negations only', [cond('!=', 'a'), cond('not_in', ['b'])]],
    ['string tests only', [cond('startswith', 'a'), cond('endswith', 'b')]],
    ['equality inside a range', [cond('==', 4), cond('gte', 4)]],
    ['different paths', [cond('==', 'a', 'attributes.x'), cond('==', 'b', 'attributes.y')]],
    ['membership in a list attribute', [cond('contains', 'a'), cond('contains', 'b')]],
  ];
  for (const [name, conditions] of satisfiable) t.same(warningsOf(oneRule(conditions)), [], name);
});

t.test('soundness: whatever is reported as never matching matches no probe, over random condition pairs', async (t) => {
  let seed = 7;
  const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
  const operators: Operator[] = ['==', '!=', 'in', 'not_in', 'gt', 'gte', 'lt', 'lte', 'startswith', 'contains'];
  let reported = 0;
  for (let round = 0; round < 3000; round++) {
    const conditions = Array.from({ length: 1 + Math.floor(next() * 3) }, () => {
      const operator = pick(operators);
      const scalar = ['gt', 'gte', 'lt', 'lte'].includes(operator) ? pick([0, 1, 2, 5, 5.5]) : pick([0, 1, 5, 'a', 'b', 'ab']);
      const value = operator === 'in' || operator === 'not_in' ? [scalar, pick([1, 'a'])].slice(0, Math.floor(next() * 3)) : operator === 'startswith' ? pick(['a', 'b']) : scalar;
      return cond(operator, value);
    });
    const flagged = warningsOf(oneRule(conditions)).some((warning) => warning.type === 'never_matches');
    if (!flagged) continue;
    reported++;
    const snapshot = compile(oneRule(conditions), 1);
    const matching = PROBES.find((value) => evaluate(snapshot, request(entity({ x: value }))).allowed);
    if (matching !== undefined) {
      t.fail(`${JSON.stringify(conditions)} was reported as never matching, yet ${JSON.stringify(matching)} matches`);
      break;
    }
  }
  t.ok(reported > 100, `${reported} contradictions found and confirmed`);
});

t.test('shadowed rules: an earlier rule of the policy matches whenever this one does', async (t) => {
  const general = rule('general', { principal: [cond('in', ['it', 'hr'], 'attributes.department')], actions: ['read', 'write'] });
  const specific = rule('specific', { principal: [cond('==', 'it', 'attributes.department'), cond('gte', 3, 'attributes.level')], actions: ['read'] });
  t.same(warningsOf([policy('p', [general, specific])]), [
    { loc: 'body.0.rules.1', type: 'shadowed', msg: "this rule never decides: it is shadowed by rule 'general' above, of the same effect" },
  ]);
  const partly = { ...specific, actions: ['read', 'delete'] };
  t.same(warningsOf([policy('p', [general, partly])]).map((w) => w.msg), [
    "this rule never decides for 'read': it is shadowed by rule 'general' above, of the same effect",
  ]);
  const denying = { ...specific, effect: 'deny' as const };
  t.same(warningsOf([policy('p', [general, denying])]).filter((w) => w.type === 'shadowed').map((w) => w.msg), [
    "this rule never decides: rule 'general' above matches whenever it does and allows",
  ]);
  t.same(warningsOf([policy('p', [specific, general])]), [], 'the more specific rule first is fine');
  t.same(warningsOf([policy('p', [general]), policy('q', [specific])]), [], 'rules of other policies do not shadow');
  const unconditional = rule('everyone', { actions: ['read'] });
  t.same(warningsOf([policy('p', [unconditional, rule('after', { resource: [cond('==', 'doc', 'attributes.kind')], actions: ['read'] })])]).map((w) => w.type), ['shadowed']);
});

t.test('actions no rule of any other policy names, when another policy names one nearly the same', async (t) => {
  const readers = policy('readers', [rule('r', { actions: ['read', 'write'] })]);
  const typo = policy('typo', [rule('t', { principal: [cond('==', 1)], actions: ['raed', 'Write', 'archive'] })]);
  t.same(warningsOf([readers, typo], [1]), [
    { loc: 'body.1.rules.0.actions.0', type: 'unknown_action', msg: "no rule of any other policy names action 'raed': did you mean 'read'?" },
    { loc: 'body.1.rules.0.actions.1', type: 'unknown_action', msg: "no rule of any other policy names action 'Write': did you mean 'write'?" },
  ]);
  t.same(warningsOf([typo], [0]), [], 'alone, a policy has no one to disagree with');
});

t.test('duplicate conditions, synonyms included', async (t) => {
  const twice = rule('twice', { principal: [cond('==', 'it'), cond('gte', 2, 'attributes.level'), cond('equals', 'it')], resource: [cond('>', 1), cond('gt', 1)] });
  t.same(warningsOf([policy('p', [twice])]), [
    { loc: 'body.0.rules.0.principal_conditions.2', type: 'duplicate_condition', msg: 'duplicate condition: attributes.x equals "it" is already in this rule' },
    { loc: 'body.0.rules.0.resource_conditions.1', type: 'duplicate_condition', msg: 'duplicate condition: attributes.x gt 1 is already in this rule' },
  ]);
});

t.test('contains of a reference to one thing (a uri, an id, an email) is flagged as a substring test, suggesting a list', async (t) => {
  const owners = (operator: Operator, value_from: string): Condition => ({ path: 'attributes.owners', operator, value_from });
  const flagged = rule('owners edit', { resource: [owners('contains', 'principal.uri')], principal: [owners('not_contains', 'principal.attributes.user_id')] });
  t.same(warningsOf([policy('p', [flagged])]), [
    {
      loc: 'body.0.rules.0.principal_conditions.0',
      type: 'substring_membership',
      msg: "attributes.owners not_contains principal.attributes.user_id is a substring test where attributes.owners is a string ('user:al' is in 'user:alice'), and membership only where it is a list: hold attributes.owners as a list of ids",
    },
    {
      loc: 'body.0.rules.0.resource_conditions.0',
      type: 'substring_membership',
      msg: "attributes.owners contains principal.uri is a substring test where attributes.owners is a string ('user:al' is in 'user:alice'), and membership only where it is a list: hold attributes.owners as a list of ids",
    },
  ]);
  for (const value_from of ['principal.attributes.email', 'resource.attributes.ownerId', 'principal.attributes.owner', 'action.attributes.id']) {
    t.same(warningsOf(oneRule([owners('contains', value_from)])).map((warning) => warning.type), ['substring_membership'], value_from);
  }
  for (const condition of [owners('contains', 'principal.attributes.department'), owners('in', 'principal.attributes.groups'), cond('contains', 'user:alice')]) {
    t.same(warningsOf(oneRule([condition])), [], `${condition.operator} ${condition.value_from ?? JSON.stringify(condition.value)}: not flagged`);
  }
});

t.test('groups: their conditions are warned about where they stand, and a group is taken to imply only the same group', async (t) => {
  const owners: Condition = { path: 'attributes.owners', operator: 'contains', value_from: 'principal.uri' };
  const admin = cond('==', 'admin', 'attributes.role');
  const grouped = rule('admins or owners', { resource: [{ any_of: [[admin], [owners]] }] });
  t.same(warningsOf([policy('p', [grouped])]).map(({ loc, type }) => ({ loc, type })), [{ loc: 'body.0.rules.0.resource_conditions.0.any_of.1.0', type: 'substring_membership' }]);

  const group = { any_of: [[cond('==', 1)], [cond('==', 2)]] };
  const narrower = rule('grouped', { principal: [group], actions: ['read'] });
  const same = rule('grouped and more', { principal: [group, cond('==', 'a', 'attributes.y')], actions: ['read'] });
  const plain = rule('plain', { principal: [cond('==', 'a', 'attributes.y')], actions: ['read'] });
  t.same(warningsOf([policy('p', [narrower, same])]).map((w) => [w.loc, w.type]), [['body.0.rules.1', 'shadowed']], 'the same group and more is shadowed');
  t.same(warningsOf([policy('p', [narrower, plain])]), [], 'a rule without the group is not: the earlier rule asks more of it');
  const negated = rule('none', { principal: [{ none_of: group.any_of }], actions: ['read'] });
  t.same(warningsOf([policy('p', [negated, narrower])]), [], 'nor is a rule with another group');
});

t.test('a condition set no rule of its policy or another refers to is warned about, naming it', async (t) => {
  const manager = [cond('==', 'manager', 'attributes.role')];
  const withSets = { ...policy('p', [rule('r', { principal: [{ set: 'manager' }] })]), condition_sets: { manager, mnager: manager } };
  t.same(warningsOf([withSets]), [{ loc: 'body.0.condition_sets.mnager', type: 'unused_condition_set', msg: "no rule of this policy or another refers to condition set 'mnager'" }]);
  t.same(warningsOf([{ ...withSets, condition_sets: { manager } }]), [], 'every set used: nothing to say');
  const library = { ...policy('roles', []), condition_sets: { manager, auditor: manager } };
  const borrower = policy('p', [rule('r', { principal: [{ any_of: [[{ set: 'manager', from: 'roles' }], [cond('==', 1)]] }] })]);
  t.same(
    warningsOf([library, borrower]).map((warning) => [warning.loc, warning.type]),
    [['body.0.condition_sets.auditor', 'unused_condition_set']],
    "a set another policy takes (in a group too) is used; the one nobody takes is not",
  );
});

t.test('presence: not_exists beside any other condition on the path never matches; exists is implied by them', async (t) => {
  const x = (operator: Operator, value?: unknown): Condition => (value === undefined ? { path: 'attributes.x', operator } : cond(operator, value));
  t.same(warningsOf(oneRule([x('not_exists'), x('!=', 1)])), [
    { loc: 'body.0.rules.0.principal_conditions', type: 'never_matches', msg: 'this rule can never match: no value of attributes.x satisfies attributes.x not_exists and attributes.x != 1' },
  ]);
  t.same(warningsOf(oneRule([x('exists'), x('not_exists')])).map((w) => w.type), ['never_matches']);
  t.same(warningsOf(oneRule([x('exists'), x('!=', 1)])), [], 'exists with another condition can hold');
  t.same(warningsOf(oneRule([x('not_exists'), cond('==', 1, 'attributes.y')])), [], 'other paths are other attributes');
  const general = rule('general', { principal: [x('exists')] });
  const specific = rule('specific', { principal: [x('gt', 3)] });
  t.same(warningsOf([policy('p', [general, specific])]).map((w) => w.msg), ["this rule never decides: it is shadowed by rule 'general' above, of the same effect"]);
  t.same(warningsOf([policy('p', [rule('absent', { principal: [x('not_exists')] }), specific])]), [], 'not_exists never shadows a rule that needs the value');
});

t.test('soundness: leaving out a path a deny rule is not warned about never turns its denial into an allow', async (t) => {
  let seed = 11;
  const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
  const KEYS = ['a', 'b', 'c'];
  let silent = 0;
  let warned = 0;
  for (let round = 0; round < 2000; round++) {
    const keys = KEYS.filter(() => next() < 0.6);
    if (keys.length === 0) continue;
    const conditions = keys.map((key) => cond('==', pick([1, 2]), `attributes.${key}`));
    const actions = next() < 0.7 ? ['read'] : ['read', 'write'];
    const denying = rule('denying', { effect: 'deny', principal: conditions, actions });
    /** A deny rule on not_exists of one path and some of the other conditions, perhaps with an action too few or a condition too many. */
    const closer = () => {
      const left = pick(keys);
      const kept = conditions.filter((condition) => condition.path !== `attributes.${left}` && next() < 0.8);
      const extra = next() < 0.15 ? [cond('==', 3, 'attributes.d')] : [];
      return rule(`closes-${left}`, { effect: 'deny', principal: [...kept, ...extra, { path: `attributes.${left}`, operator: 'not_exists' }], actions: next() < 0.85 ? actions : ['read'] });
    };
    const allow = rule('allow', { principal: [cond('in', [1, 2], `attributes.${pick(KEYS)}`)], actions: ['read', 'write'] });
    const own = [denying, ...Array.from({ length: Math.floor(next() * 4) }, () => (next() < 0.25 ? allow : closer()))];
    for (let swaps = 0; swaps < own.length; swaps++) {
      const [i, j] = [Math.floor(next() * own.length), Math.floor(next() * own.length)];
      [own[i], own[j]] = [own[j]!, own[i]!];
    }
    const others = next() < 0.5 ? [policy('q', [...(next() < 0.3 ? [allow] : []), closer()], 'allow')] : [];
    const policies = [policy('p', own, 'allow'), ...others];
    const at = own.indexOf(denying);
    const warnings = warningsOf(policies, [0]).filter((w) => w.type === 'escaped_by_omission' && w.loc.startsWith(`body.0.rules.${at}.`));
    const snapshot = compile(policies, 1);
    conditions.forEach((condition, index) => {
      const isWarned = warnings.some((w) => w.loc === `body.0.rules.${at}.principal_conditions.${index}`);
      if (isWarned) {
        warned++;
        return;
      }
      silent++;
      const meeting = Object.fromEntries(conditions.map((other) => [other.path.slice('attributes.'.length), other.value]));
      const leaving = Object.fromEntries(Object.entries(meeting).filter(([key]) => `attributes.${key}` !== condition.path));
      for (const action of actions) {
        const decide = (attributes: Record<string, unknown>) => evaluate(snapshot, request(entity(attributes), entity({ kind: 'doc' }), action)).allowed;
        if (decide(leaving) && !decide(meeting)) {
          t.fail(`no warning for ${condition.path} of ${JSON.stringify(policies)}, yet ${JSON.stringify(meeting)} is denied to ${action} and allowed without it`);
          return;
        }
      }
    });
  }
  t.ok(silent > 200 && warned > 200, `${silent} paths closed and confirmed, ${warned} warned about`);
});

t.test('soundness with references: leaving out a value a deny rule refers to, when not warned about, never turns its denial into an allow', async (t) => {
  let seed = 29;
  const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const KEYS = ['a', 'b', 'c'];
  let silent = 0;
  let warned = 0;
  for (let round = 0; round < 1500; round++) {
    const keys = KEYS.filter(() => next() < 0.6);
    if (keys.length === 0) continue;
    // The resource's r<key> differs from the principal's <key>: the rule denies when every value is there.
    const relations: Condition[] = keys.map((key) => ({ path: `attributes.r${key}`, operator: '!=', value_from: `principal.attributes.${key}` }));
    const denying = rule('denying', { effect: 'deny', resource: relations, actions: ['read'] });
    const closer = () => {
      const left = keys[Math.floor(next() * keys.length)]!;
      const kept = relations.filter((relation) => relation.value_from !== `principal.attributes.${left}` && next() < 0.8);
      const extra = next() < 0.15 ? [cond('==', 3, 'attributes.d')] : [];
      return rule(`closes-${left}`, { effect: 'deny', principal: [...extra, { path: `attributes.${left}`, operator: 'not_exists' }], resource: kept, actions: ['read'] });
    };
    const rules = [denying, ...Array.from({ length: Math.floor(next() * 3) }, closer)];
    const policies = [policy('p', next() < 0.5 ? rules : rules.reverse(), 'allow')];
    const at = policies[0]!.rules.indexOf(denying);
    const warnings = warningsOf(policies).filter((w) => w.type === 'escaped_by_omission' && w.loc.startsWith(`body.0.rules.${at}.`));
    const snapshot = compile(policies, 1);
    const decide = (principal: Record<string, unknown>) =>
      evaluate(snapshot, request(entity(principal), entity(Object.fromEntries(keys.map((key) => [`r${key}`, 'y']))), 'read')).allowed;
    const meeting = Object.fromEntries(keys.map((key) => [key, 'x']));
    t.equal(decide(meeting), false);
    for (const key of keys) {
      if (warnings.some((w) => w.msg.includes(`leaves out the principal's attributes.${key} `))) {
        warned++;
        continue;
      }
      silent++;
      const { [key]: _, ...leaving } = meeting;
      if (decide(leaving)) t.fail(`no warning for the principal's ${key} in ${JSON.stringify(policies)}, yet leaving it out is allowed`);
    }
  }
  t.ok(silent > 100 && warned > 100, `${silent} references closed and confirmed, ${warned} warned about`);
});

t.test('omission warnings are bounded: at most 100 and one saying how many more, and a long closing rule is described', async (t) => {
  const denying = (index: number) => rule(`d${index}`, { effect: 'deny', principal: [cond('==', index, `attributes.a${index}`)], actions: ['read'] });
  const many = warningsOf([policy('p', Array.from({ length: 150 }, (_, index) => denying(index)))]).filter((w) => w.type === 'escaped_by_omission');
  t.equal(many.length, MAX_OMISSION_WARNINGS + 1);
  t.same(many.at(-1), {
    loc: `body.0.rules.${MAX_OMISSION_WARNINGS}.principal_conditions.0`,
    type: 'escaped_by_omission',
    msg: `50 more attributes of deny rules, from here on, let a request escape by leaving them out: the first ${MAX_OMISSION_WARNINGS} are listed`,
  });

  const long = rule('long', { effect: 'deny', principal: [cond('==', 1, 'attributes.a'), cond('==', 'x'.repeat(2000), 'attributes.b')], actions: ['read'] });
  const [onA] = warningsOf([policy('p', [long])]);
  t.match(onA!.msg, /with this rule next to it, with no allow rule between them \(it denies every check without attributes\.a; [^)]*\): a deny rule with this rule's actions and conditions, but \{"path":"attributes.a","operator":"not_exists"\} in place of those on attributes.a$/);
});

/** Optimal string alignment distance over the whole table: what withinEdits must agree with. */
function referenceDistance(left: string, right: string): number {
  const rows = Array.from({ length: left.length + 1 }, (_, i) => Array.from({ length: right.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= left.length; i++) {
    for (let j = 1; j <= right.length; j++) {
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + (left[i - 1] === right[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && left[i - 1] === right[j - 2] && left[i - 2] === right[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[left.length]![right.length]!;
}

t.test('the edit distance of the typo check: the full table within its band, on random actions', async (t) => {
  const action = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'd'), maxLength: 9 });
  fc.assert(
    fc.property(action, action, fc.constantFrom(1, 2), (left, right, limit) => withinEdits(left, right, limit) === referenceDistance(left, right) <= limit),
    { numRuns: 5000 },
  );
  t.ok(withinEdits('administer', 'adminsiter', 1), 'a swap of neighbours is one edit');
  t.notOk(withinEdits('read', 'write', 2));
});

t.test("actions of any length: the typo check's work grows with their length, not its square", async (t) => {
  // Policies stored before actions had a length limit may hold any: two of 100,000 characters once
  // needed a table of 10^10 cells (two of 8,000 ran a 192 MB heap out of memory).
  const long = 'x'.repeat(100_000);
  const stored = policy('stored', [rule('r', { actions: [long] })]);
  const typo = policy('typo', [rule('t', { actions: [`${long.slice(1)}y`] })]);
  t.same(warningsOf([stored, typo], [1]).map((warning) => warning.type), ['unknown_action']);
  t.same(warningsOf([stored, policy('other', [rule('t', { actions: ['y'.repeat(100_000)] })])], [1]), []);
});

t.test('did you mean: the first action, in the order the set names them, that another policy names', async (t) => {
  const set = [
    policy('own', [rule('r', { actions: ['reads'] })]),
    policy('near', [rule('r', { actions: ['raeds'] })]),
    policy('folded', [rule('r', { actions: ['READS', 'reads'] })]),
  ];
  const checked = policy('checked', [rule('r', { principal: [cond('==', 1)], actions: ['Reads', 'reads'] })]);
  t.same(warningsOf([...set, checked], [3]).map((warning) => warning.msg), [
    "no rule of any other policy names action 'Reads': did you mean 'reads'?",
  ], "'reads' is named by policies other than this one, first of all the candidates");
  t.same(warningsOf([checked, ...set.slice(1)], [0]).map((warning) => warning.msg), [
    "no rule of any other policy names action 'Reads': did you mean 'raeds'?",
  ], "without policy 'own', 'raeds' comes before 'READS' and 'reads', which this policy names first");
});

t.test('a report is held to its budget and its work: it stops with a last warning saying so, the ones before it unchanged', async (t) => {
  const duplicated = (name: string) => rule(name, { principal: [cond('==', 1), cond('==', 1)], actions: [name] });
  const many = [policy('p', Array.from({ length: 50 }, (_, index) => duplicated(`r${index}`)))];
  const all = policyWarnings(many, [0], () => ['body']);
  t.equal(all.length, 50);
  const cut = policyWarnings(many, [0], () => ['body'], { maxLength: 2000 });
  const last = cut.at(-1)!;
  t.same(last, { loc: ['body'], msg: 'the report stops here: its warnings would be longer than 2000 characters; fix these, or validate fewer policies at a time, to see the rest', type: 'incomplete' });
  t.same(cut.slice(0, -1), all.slice(0, cut.length - 1), 'the warnings before it are the first of the whole report');
  t.ok(JSON.stringify(cut.slice(0, -1)).length <= 2000);

  const shadowingEverything = [policy('p', Array.from({ length: 300 }, (_, index) => rule(`r${index}`, { principal: [cond('==', 1), cond('==', index, 'attributes.y')], actions: ['read'] })))];
  const unfinished = policyWarnings(shadowingEverything, [0], () => ['body'], { workLimit: 10_000 });
  t.same(unfinished, [{ loc: ['body'], msg: 'the checks stop here, unfinished: validate fewer or smaller policies at a time to check them all', type: 'incomplete' }]);
  t.same(policyWarnings(shadowingEverything, [0], () => ['body']), [], 'with the default work limit, every pair of its 300 rules is compared');

  let pauses = 0;
  const report = reportWarnings(shadowingEverything, [0], () => ['body']);
  while (report.next().done !== true) pauses++;
  t.ok(pauses > 0, `made in slices: ${pauses} pauses, between which the server answers other requests`);
});

t.test('did you mean, on random action sets: what a plain scan of every other policy’s actions finds', async (t) => {
  const folded = (action: string) => action.toLowerCase().replace(/[-_ ]/g, '');
  /** The check as first written: each action against every action of the other policies, in order, over the whole table. */
  const plainScan = (policies: Policy[], checked: number) =>
    policies[checked]!.rules.flatMap((rule, ruleIndex) =>
      rule.actions.flatMap((action, index) => {
        const elsewhere = new Set(policies.flatMap((other, at) => (at === checked ? [] : other.rules.flatMap((r) => r.actions))));
        if (elsewhere.has(action)) return [];
        const threshold = action.length > 4 ? 2 : 1;
        const near = [...elsewhere].find((other) => folded(other) === folded(action) || referenceDistance(action, other) <= threshold);
        return near === undefined ? [] : [`body.${checked}.rules.${ruleIndex}.actions.${index}: ${near}`];
      }),
    );
  const action = fc.string({ unit: fc.constantFrom('a', 'b', 'A', '-', 'c'), minLength: 1, maxLength: 7 });
  const actionPolicy = (name: string) => fc.array(fc.array(action, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 3 }).map((rules) => policy(name, rules.map((actions, index) => rule(`r${index}`, { actions }))));
  let found = 0;
  fc.assert(
    fc.property(fc.tuple(actionPolicy('a'), actionPolicy('b'), actionPolicy('c')), fc.nat(2), (set, checked) => {
      const expected = plainScan(set, checked);
      found += expected.length;
      const warned = warningsOf(set, [checked])
        .filter((warning) => warning.type === 'unknown_action')
        .map((warning) => `${warning.loc}: ${/did you mean '(.*)'\?$/.exec(warning.msg)![1]}`);
      return JSON.stringify(warned) === JSON.stringify(expected);
    }),
    { numRuns: 2000 },
  );
  t.ok(found > 500, `${found} likely typos found alike`);
});
