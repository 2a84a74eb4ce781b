import t from 'tap';
import { runVerdict } from '../helpers/child.js';
import { temporaryDataDir } from '../helpers/server.js';

// `--store mongodb-memory` starts mongod from MONGOMS_SYSTEM_BINARY when it is set, instead of
// downloading one: shown with a binary that is not mongod (no MongoDB can run here), which
// mongodb-memory-server runs to read its version, and the start stops in one line saying so.

t.test('--store mongodb-memory runs the mongod named by MONGOMS_SYSTEM_BINARY, and says so in one line when it cannot', async (t) => {
  const { code, stderr } = await runVerdict(t, ['start', '--store', 'mongodb-memory', '--port', '0', '--data-dir', temporaryDataDir()], {
    MONGOMS_SYSTEM_BINARY: '/bin/false',
    MONGODB_URI: '',
  }).exited;
  t.equal(code, 1);
  const lines = stderr.trim().split('\n');
  t.equal(lines.length, 1, 'one line');
  t.match(lines[0], /^verdict: --store mongodb-memory could not start mongod from MONGOMS_SYSTEM_BINARY \(\/bin\/false\): /);
  t.match(lines[0], /system binary/i, 'mongodb-memory-server ran that binary (to read its version) instead of downloading one');
});
