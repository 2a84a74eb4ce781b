import t from 'tap';
import { curlSteps, readDocument, replay, section } from '../helpers/markdown.js';
import { startServer } from '../helpers/server.js';

/** docs/policies-as-code.md: its curl examples, replayed in order against a real server, answer byte for byte as written. */

const DOCUMENT = readDocument('docs/policies-as-code.md');

t.test('explaining a decision, then validating a policy, as the document shows', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const steps = [...curlSteps(section(DOCUMENT, 'Explaining a decision')), ...curlSteps(section(DOCUMENT, 'Validating before applying'))];
  t.equal(steps.length, 3, 'every example is replayed');
  await replay(t, server, steps);
});
