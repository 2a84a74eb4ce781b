import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

// docs/internals.md says a request goes down the layers and never up them; this holds the source
// (TypeScript, not the build) to it: which folder may import which, and no module importing itself
// through others (a circle makes load order matter and hides which module is the lower one).

const CHECKOUT = fileURLToPath(new URL('../../../', import.meta.url));
const ROOTS = ['src', 'workers', 'clients/node/src'];

/** Every module of `src/` and `workers/`, by its path from the checkout, with the modules it imports. */
function importGraph(): Map<string, string[]> {
  const modules = ROOTS.flatMap((root) =>
    readdirSync(join(CHECKOUT, root), { recursive: true, encoding: 'utf8' })
      .filter((path) => path.endsWith('.ts'))
      .map((path) => join(root, path)),
  );
  const known = new Set(modules);
  const graph = new Map<string, string[]>();
  for (const module of modules) {
    const text = readFileSync(join(CHECKOUT, module), 'utf8');
    const imported = [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom '(\.{1,2}\/[^']+)'/gm)].map((match) =>
      normalize(join(dirname(module), match[1]!)).replace(/\.js$/, '.ts'),
    );
    graph.set(module, imported.filter((path) => known.has(path)));
  }
  return graph;
}

/** The circles of the graph: its strongly connected parts of more than one module (Tarjan's algorithm). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const order = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (module: string): void => {
    order.set(module, next);
    lowest.set(module, next);
    next++;
    stack.push(module);
    onStack.add(module);
    for (const imported of graph.get(module) ?? []) {
      if (!order.has(imported)) {
        visit(imported);
        lowest.set(module, Math.min(lowest.get(module)!, lowest.get(imported)!));
      } else if (onStack.has(imported)) lowest.set(module, Math.min(lowest.get(module)!, order.get(imported)!));
    }
    if (lowest.get(module) !== order.get(module)) return;
    const circle: string[] = [];
    for (let member = stack.pop()!; ; member = stack.pop()!) {
      onStack.delete(member);
      circle.push(member);
      if (member === module) break;
    }
    if (circle.length > 1) found.push(circle.sort());
  };
  for (const module of graph.keys()) if (!order.has(module)) visit(module);
  return found;
}

const graph = importGraph();

t.test('the import graph reads every module, and the search below finds a circle when there is one', async (t) => {
  t.ok(graph.size > 100, `${graph.size} modules`);
  t.same(circles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]])), [['a', 'b', 'c']]);
});

t.test('no module imports itself through others', async (t) => {
  t.same(circles(graph), []);
});

/**
 * Every folder (and top-level module) of `src/`, `workers/` and `clients/`, in layers from the lowest:
 * a module may import from its own layer and those below it, never from one above, but for the
 * crossings listed in UPWARD, each with why. A folder missing here fails the test: a new one is given
 * its place.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['src/schemas/'],
  ['src/engine/'],
  ['src/clock.ts', 'src/errors.ts', 'src/loopback.ts', 'src/version.ts', 'src/private-files.ts', 'src/document-files.ts', 'src/settle-memory.ts', 'src/node-http.ts', 'src/per-second-share.ts'],
  ['src/config/'],
  ['src/admin-keys.ts', 'src/requests/'],
  ['src/registry/', 'src/identity/', 'src/ext-authz/'],
  ['src/attribute-schemas/'],
  // The audit trail is written by the stores, in the transaction of each write, and read through them.
  ['src/store/', 'src/audit/'],
  ['src/decision-log/', 'src/snapshot/', 'src/decide/', 'src/policy-files/'],
  ['src/live/', 'src/tracing/'],
  ['src/pool/'],
  ['workers/'],
  ['src/services/'],
  ['src/http/', 'src/grpc/'],
  ['src/app.ts', 'src/process/', 'src/cli/', 'src/cli.ts'],
  // The Node client is a package of its own: it reads the wire schemas and nothing else of the server.
  ['clients/node/'],
];

/** The imports that cross to a higher layer, each with why it is sound (each a pair of path prefixes). */
const UPWARD: readonly { from: string; to: string; why: string }[] = [
  { from: 'src/config/config.ts', to: 'src/audit/retention.ts', why: 'a setting is parsed by the module of the thing it sets' },
  { from: 'src/config/config.ts', to: 'src/audit/record.ts', why: "the retention setting's type" },
  { from: 'src/config/config.ts', to: 'src/decision-log/mask.ts', why: 'a setting is parsed by the module of the thing it sets' },
  { from: 'src/decision-log/decision-log.ts', to: 'workers/entry-points.ts', why: "the file its writer thread runs, a URL: nothing of the thread's code" },
  { from: 'src/pool/bulk-pool.ts', to: 'workers/entry-points.ts', why: 'the file its threads run, a URL' },
  { from: 'src/registry/entity-cache.ts', to: 'src/store/store.ts', why: 'the entity cache reads the store it caches, through its interface' },
  { from: 'src/live/metrics.ts', to: 'src/pool/', why: 'the metrics observe each part by its type only' },
  { from: 'src/live/metrics.ts', to: 'src/snapshot/', why: 'the metrics observe each part by its type only' },
  { from: 'src/live/metrics.ts', to: 'src/policy-files/', why: 'the metrics observe each part by its type only' },
];

/** The layer of a module, by its path: the index in LAYERS of the entry it falls under. */
const layerOf = (module: string): number => LAYERS.findIndex((layer) => layer.some((entry) => module.startsWith(entry)));

t.test('every folder of src/, workers/ and clients/ has its layer', async (t) => {
  t.same([...graph.keys()].filter((module) => layerOf(module) === -1), []);
});

t.test('no module imports from a layer above its own, but the crossings explained', async (t) => {
  const crossings = [...graph].flatMap(([module, imported]) =>
    imported
      .filter((path) => layerOf(path) > layerOf(module) && !UPWARD.some(({ from, to }) => module.startsWith(from) && path.startsWith(to)))
      .map((path) => `${module} → ${path}`),
  );
  t.same(crossings, []);
  t.ok(
    UPWARD.every(({ from, to }) => [...graph].some(([module, imported]) => module.startsWith(from) && imported.some((path) => path.startsWith(to)))),
    'and no explained crossing is left that nothing makes',
  );
});

t.test("the engine's evaluate is called in src/decide/ alone: every door reaches it through the kernel", async (t) => {
  const callers = [...graph.keys()].filter((module) => !module.startsWith('src/engine/') && !module.startsWith('src/decide/') && /\bevaluate\(/.test(readFileSync(join(CHECKOUT, module), 'utf8')));
  t.same(callers, []);
});

t.test("no module imports node:http but for its types: they take it from src/node-http.ts, as the import's cost says there", async (t) => {
  const importers = [...graph.keys()].filter((module) => /^import\s+(?!type\b)[^;]*?\bfrom '(?:node:)?http'/m.test(readFileSync(join(CHECKOUT, module), 'utf8')));
  t.same(importers, []);
  t.ok(/^import type [^;]*from 'node:http'/m.test(readFileSync(join(CHECKOUT, 'src/process/listeners.ts'), 'utf8')), 'an import of types only is allowed');
});
