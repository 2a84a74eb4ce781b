// The version a release tag names, checked against package.json and CHANGELOG.md: prints it, or
// says what disagrees and exits 1. The release workflow runs it first, so that nothing is built,
// pushed or signed for a tag that does not name the version the checkout holds.
//
//   node scripts/release-version.mjs v0.2.0
import { readFileSync } from 'node:fs';

const tag = process.argv[2] ?? '';
const fail = (message) => {
  console.error(`release: ${message}`);
  process.exit(1);
};
const match = /^v(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)$/.exec(tag);
if (match === null) fail(`the tag '${tag}' is not v<major>.<minor>.<patch>`);
const version = match[1];
const { version: packaged } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
if (packaged !== version) fail(`the tag names ${version}, package.json ${packaged}`);
const changelog = readFileSync(new URL('../CHANGELOG.md', import.meta.url), 'utf8');
if (!changelog.split('\n').includes(`## ${version}`)) fail(`CHANGELOG.md has no section '## ${version}'`);
console.log(version);
