import t from 'tap';
import { compile, derive, evaluate } from '../../src/engine/index.js';
import type { Policy } from '../../src/schemas/policy.js';
import { entity, policy, request } from './helpers.js';

// A derived snapshot's default effects by resource type follow deletions and replacements of scoped
// policies, as a full compile of the same set would.

const scoped = (name: string, types: string[], defaultEffect: 'allow' | 'deny'): Policy => ({ ...policy(name, [], defaultEffect), resource_types: types });
const onDoc = request(entity({ role: 'x' }), entity({}, 'doc:1'));
const onVideo = request(entity({ role: 'x' }), entity({}, 'video:1'));

t.test('deleting or replacing a scoped policy takes its default away from its types', async (t) => {
  const everyone = policy('everyone', [], 'allow');
  const documents = scoped('documents', ['doc'], 'deny');
  const before = compile([everyone, documents], 1, [0, 1]);
  t.equal(evaluate(before, onDoc).allowed, false, 'the scoped deny default speaks for documents');
  const deleted = derive(before, [{ name: 'documents', now: null }], 2)!;
  t.same(evaluate(deleted, onDoc), evaluate(compile([everyone], 2), onDoc), 'deleted: as a full compile of what is left');
  t.equal(evaluate(deleted, onDoc).allowed, true);
  const replaced = derive(before, [{ name: 'documents', now: { policy: scoped('documents', ['video'], 'deny'), position: 1 } }], 3)!;
  t.equal(evaluate(replaced, onDoc).allowed, true, 'replaced with another type: documents are no longer its');
  t.equal(evaluate(replaced, onVideo).allowed, false, 'videos are');
  t.same([evaluate(replaced, onDoc), evaluate(replaced, onVideo)], [evaluate(compile([everyone, scoped('documents', ['video'], 'deny')], 3), onDoc), evaluate(compile([everyone, scoped('documents', ['video'], 'deny')], 3), onVideo)]);
});
