import t from 'tap';
import { curlSteps, readDocument, replay, section } from '../helpers/markdown.js';
import { startServer } from '../helpers/server.js';

// docs/impact.md's five-minute example, replayed from the document: the answer is what its text says.

t.test("docs/impact.md's example: two checks from allow to deny, one from deny to allow, by the rules it names", async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const text = section(readDocument('docs/impact.md'), 'In five minutes');
  const steps = curlSteps(text);
  t.equal(steps.length, 5, 'a policy, three checks, the preview');
  const answers = await replay(t, server, steps);
  const impact = answers.at(-1) as Record<string, any>;
  t.match(text, /two checks going from allow to deny \(the readers\) and one from deny to allow \(the\s+guest\)/);
  t.same(impact.changed, { allow_to_deny: 2, deny_to_allow: 1 });
  t.match(text, /`access\/readers → default deny` and `default deny → access\/guests`/);
  t.same(impact.by_rule.map((group: { before: string; after: string }) => `${group.before} → ${group.after}`), ['access/readers → default deny', 'default deny → access/guests']);
  t.match(text, /The\s+`sample` holds all three checks, explained both ways/);
  t.equal(impact.sample.length, 3);
  t.ok(impact.sample.every((each: { before: { explain?: unknown }; after: { explain?: unknown } }) => each.before.explain !== undefined && each.after.explain !== undefined));
});
