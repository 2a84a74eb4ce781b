import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

// docs/internals.md says a request goes down the layers and never up them; this holds the source
// (TypeScript, not the build) to it: which folder may import which, and no module importing itself
// through others (a circle makes load order matter and hides which module is the lower one).

const CHECKOUT = fileURLToPath(new URL('../../../', import.meta.url));
const ROOTS = ['src', 'workers'];

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

/** What each layer may import from the others: a prefix of the importing path, and the prefixes it must not reach. */
const FORBIDDEN: readonly { layer: string; mayNotImport: readonly string[] }[] = [
  { layer: 'src/engine/', mayNotImport: ['src/http/', 'src/services/', 'src/store/', 'src/snapshot/', 'src/decide/', 'src/pool/', 'src/registry/', 'src/config/', 'workers/'] },
  { layer: 'src/decide/', mayNotImport: ['src/http/', 'src/services/', 'src/pool/'] },
  { layer: 'src/pool/', mayNotImport: ['src/http/', 'src/services/'] },
  { layer: 'workers/', mayNotImport: ['src/http/', 'src/services/'] },
  { layer: 'src/snapshot/', mayNotImport: ['src/http/', 'src/services/'] },
  { layer: 'src/store/', mayNotImport: ['src/http/', 'src/services/', 'src/snapshot/'] },
  { layer: 'src/services/', mayNotImport: ['src/http/'] },
];

t.test('a layer imports nothing above it', async (t) => {
  const crossings = [...graph].flatMap(([module, imported]) => {
    const rule = FORBIDDEN.find(({ layer }) => module.startsWith(layer));
    return rule === undefined ? [] : imported.filter((path) => rule.mayNotImport.some((above) => path.startsWith(above))).map((path) => `${module} → ${path}`);
  });
  t.same(crossings, []);
});
