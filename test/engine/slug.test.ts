import t from 'tap';
import { slugify } from '../../src/engine/index.js';

t.test('lowercase and separators', async (t) => {
  t.equal(slugify('hello'), 'hello');
  t.equal(slugify('Hello World'), 'hello-world');
  t.equal(slugify('HELLO'), 'hello');
  t.equal(slugify('a1-b2'), 'a1-b2');
  t.equal(slugify('Policy 2024'), 'policy-2024');
  t.equal(slugify('a.b/c:d'), 'a-b-c-d');
  t.equal(slugify('a\tb\nc'), 'a-b-c');
  t.equal(slugify('a+b=c&d'), 'a-b-c-d');
  t.equal(slugify("it's"), 'it-s');
});

t.test('accents are folded', async (t) => {
  t.equal(slugify('Café Ünïcode'), 'cafe-unicode');
  t.equal(slugify('naïve résumé'), 'naive-resume');
  t.equal(slugify('ÀÉÎÕÜ'), 'aeiou');
  t.equal(slugify('Ångström'), 'angstrom');
  t.equal(slugify('crème brûlée'), 'creme-brulee');
  t.equal(slugify('Cafe\u0301'), 'cafe', 'an already decomposed accent');
  t.equal(slugify('ñ'), 'n');
  t.equal(slugify('ﬁle'), 'file', 'compatibility forms decompose too');
});

t.test('runs of - collapse and the ends are trimmed', async (t) => {
  t.equal(slugify('a  b'), 'a-b');
  t.equal(slugify('a - b'), 'a-b');
  t.equal(slugify('a--b'), 'a-b');
  t.equal(slugify('a-----b'), 'a-b');
  t.equal(slugify('a!@#$%b'), 'a-b');
  t.equal(slugify('  padded  '), 'padded');
  t.equal(slugify('-a-'), 'a');
  t.equal(slugify('--a--b--'), 'a-b');
  t.equal(slugify('!start and end!'), 'start-and-end');
});

t.test('underscores are kept as they are', async (t) => {
  t.equal(slugify('___'), '___');
  t.equal(slugify('_a_'), '_a_');
  t.equal(slugify('snake_case_name'), 'snake_case_name');
  t.equal(slugify('a__b'), 'a__b');
  t.equal(slugify('a _ b'), 'a-_-b');
  t.equal(slugify('-_-'), '_');
});

t.test('characters with no ASCII form become -, possibly leaving nothing', async (t) => {
  t.equal(slugify(''), '');
  t.equal(slugify('   '), '');
  t.equal(slugify('!!!'), '');
  t.equal(slugify('---'), '');
  t.equal(slugify('日本語'), '');
  t.equal(slugify('日本 policy'), 'policy');
  t.equal(slugify('a日b'), 'a-b');
  t.equal(slugify('\u0301'), '', 'a lone combining mark');
  t.equal(slugify('😀 smile'), 'smile');
});

t.test('slugify is idempotent', async (t) => {
  for (const name of ['Café Ünïcode', 'a - b', '___', 'Hello World!', '--x--', 'a__b']) {
    const once = slugify(name);
    t.equal(slugify(once), once, name);
  }
});
