import t from 'tap';
import { readFileSync } from 'node:fs';
import semver from 'semver';

/**
 * `npm ci` warns EBADENGINE when an installed package does not support the running Node. Every
 * package the lockfile installs, development ones included, must support every Node version that
 * package.json's `engines` promises, so that no supported Node sees that warning.
 */

interface Locked {
  version?: string;
  engines?: { node?: string };
}

const root = (path: string) => JSON.parse(readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8'));
const promised: string = root('package.json').engines.node;
const locked: Record<string, Locked> = root('package-lock.json').packages;

t.ok(semver.validRange(promised), `engines.node is a valid range: ${promised}`);
t.ok(semver.satisfies(process.version, promised), `the Node running the tests (${process.version}) is one package.json promises`);

t.test('every locked package supports every promised Node version', async (t) => {
  const unsupported = Object.entries(locked)
    .filter(([path, entry]) => path !== '' && entry.engines?.node !== undefined && !semver.subset(promised, entry.engines.node))
    .map(([path, entry]) => `${path.replace(/^.*node_modules\//, '')}@${entry.version} wants node ${entry.engines!.node}`);
  t.same(unsupported, [], `packages whose engines exclude part of ${promised}`);
});

t.test('the image runs the newest Node line package.json promises, a long-term-support (even) line, in every stage', async (t) => {
  const lines = semver.validRange(promised)!.split('||').map((range) => semver.minVersion(range.trim())!.major);
  const newest = Math.max(...lines);
  t.equal(newest % 2, 0, `Node ${newest} is an even line, which becomes long-term support`);
  const dockerfile = readFileSync(new URL('../../../deploy/Dockerfile', import.meta.url), 'utf8');
  const bases = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((match) => match[1]);
  t.ok(bases.length >= 2, `stages: ${bases.join(', ')}`);
  for (const base of bases) t.match(base, new RegExp(`^node:${newest}-`), `${base} is Node ${newest}`);
});
