import t from 'tap';
import { DecisionCache } from '../../clients/node/src/decision-cache.js';

// The client's decision cache as a data structure: its bounds, what a drop removes, what it refuses to keep.

const allowed = (reason = 'Rule r allowed the action in policy p') => ({ allowed: true, reason });

t.test('bounded by entries: the oldest unread entry goes first, a read one gets a second chance', async (t) => {
  const cache = new DecisionCache({ maxEntries: 3, maxBytes: 1 << 20 });
  for (const key of ['a', 'b', 'c']) cache.set(key, allowed(), [], cache.epoch);
  t.ok(cache.get('a'), 'a read');
  cache.set('d', allowed(), [], cache.epoch);
  t.equal(cache.size, 3);
  t.ok(cache.get('a'), 'a, read, stayed');
  t.equal(cache.get('b'), undefined, 'b, the oldest unread, went');
  t.ok(cache.get('c') && cache.get('d'));
});

t.test('bounded by bytes: entries go until the rest fit, and one larger than the whole cache is not kept', async (t) => {
  const cache = new DecisionCache({ maxEntries: 1000, maxBytes: 1000 });
  for (let index = 0; index < 20; index++) cache.set(`key-${index}`, allowed('x'.repeat(100)), [], cache.epoch);
  t.ok(cache.size < 20 && cache.size > 0, `${cache.size} of 20 kept in 1,000 bytes`);
  t.ok(cache.get('key-19'), 'the newest is there');
  cache.set('huge', allowed('x'.repeat(2000)), [], cache.epoch);
  t.equal(cache.get('huge'), undefined);
});

t.test('a drop removes exactly the decisions that read the uris; an answer asked for before a drop is not kept', async (t) => {
  const cache = new DecisionCache({ maxEntries: 100, maxBytes: 1 << 20 });
  cache.set('alice-doc', allowed(), ['user:alice', 'doc:1'], cache.epoch);
  cache.set('bob-doc', allowed(), ['user:bob', 'doc:1'], cache.epoch);
  cache.set('bob-img', allowed(), ['user:bob', 'img:1'], cache.epoch);
  cache.set('attributes', allowed(), [], cache.epoch);
  const askedAt = cache.epoch;
  cache.dropUris(['user:bob']);
  t.same(['alice-doc', 'bob-doc', 'bob-img', 'attributes'].map((key) => cache.get(key) !== undefined), [true, false, false, true]);
  cache.set('late', allowed(), ['user:carol'], askedAt);
  t.equal(cache.get('late'), undefined, 'asked for before the drop: it may hold what was dropped');
  cache.dropUris(['doc:1']);
  t.equal(cache.get('alice-doc'), undefined);
  cache.clear();
  t.equal(cache.size, 0);
});
