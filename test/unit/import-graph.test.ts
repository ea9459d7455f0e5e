// The import graph of src/ has no circle: no cycle between files, and no cycle between rooms (the ROOMS table of
// eslint.config.js; the files at the top of src/ and src/gen/ are the base room). Every relative import counts:
// `import ... from`, `export ... from`, type-only imports, side-effect imports and `import()`.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The repository's root (this file runs as dist/test/unit/import-graph.test.js). */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The room table of eslint.config.js (plain JavaScript at the root, read as the lint reads it). */
const { ROOMS } = (await import(pathToFileURL(path.join(root, 'eslint.config.js')).href)) as { ROOMS: Record<string, unknown> };

/** A directed graph: each node and the nodes it imports. */
type Graph = Map<string, Set<string>>;

/** The relative module specifiers `code` imports or re-exports (static, type-only, side-effect, or `import()`). */
export function relativeImports(code: string): string[] {
  const found: string[] = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?[^'";]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]/g,
    /\bimport\s*['"](\.{1,2}\/[^'"]+)['"]/g,
    /\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of code.matchAll(re)) found.push(m[1]);
  return found;
}

/** Every .ts file under `dir`, as paths relative to the repository root with forward slashes. */
function tsFiles(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(`${dir}/${e.name}`) : e.name.endsWith('.ts') ? [`${dir}/${e.name}`] : [],
  );
}

/** The file graph of src/: each file and the src files it imports (a `.js` specifier names its `.ts` source). */
function fileGraph(): Graph {
  const graph: Graph = new Map();
  for (const file of tsFiles('src')) {
    const targets = relativeImports(readFileSync(path.join(root, file), 'utf8')).map((spec) =>
      path.posix.join(path.posix.dirname(file), spec).replace(/\.js$/, '.ts'),
    );
    graph.set(file, new Set(targets));
  }
  return graph;
}

/** The room of a src file: the longest room of ROOMS its folder is in, or `base` (top of src/, src/gen/). */
export function roomOf(file: string, rooms: string[]): string {
  const dir = path.posix.dirname(file).replace(/^src\/?/, '');
  const hit = rooms.filter((r) => dir === r || dir.startsWith(r + '/')).sort((a, b) => b.length - a.length)[0];
  return hit ?? 'base';
}

/** The room graph of a file graph: an edge between two rooms for each import from a file of one to a file of the other. */
export function roomGraph(files: Graph, rooms: string[]): Graph {
  const graph: Graph = new Map();
  for (const [from, targets] of files) {
    const a = roomOf(from, rooms);
    const edges = graph.get(a) ?? new Set<string>();
    graph.set(a, edges);
    for (const to of targets) if (roomOf(to, rooms) !== a) edges.add(roomOf(to, rooms));
  }
  return graph;
}

/** The cycles of `graph`: each strongly connected component of more than one node (or a node importing itself), sorted. */
export function cycles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v)?.has(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found.sort((a, b) => a[0].localeCompare(b[0]));
}

/** Builds a graph from `from -> to` pairs (for the hand-made cases). */
function graphOf(edges: [string, string][]): Graph {
  const graph: Graph = new Map();
  for (const [a, b] of edges) {
    graph.set(a, (graph.get(a) ?? new Set()).add(b));
    if (!graph.has(b)) graph.set(b, new Set());
  }
  return graph;
}

describe('import graph of src/', () => {
  const rooms = Object.keys(ROOMS);

  it('has no cycle between files', () => {
    const found = cycles(fileGraph());
    assert.deepEqual(found, [], `import cycles between files:\n${found.map((c) => c.join(' <-> ')).join('\n')}`);
  });

  it('has no cycle between rooms', () => {
    const files = fileGraph();
    const found = cycles(roomGraph(files, rooms));
    const why = found.map((c) => {
      const arrows = [...files].flatMap(([f, ts]) =>
        [...ts].filter((t) => c.includes(roomOf(t, rooms)) && c.includes(roomOf(f, rooms)) && roomOf(t, rooms) !== roomOf(f, rooms)).map((t) => `  ${f} -> ${t}`),
      );
      return `${c.join(' <-> ')}\n${arrows.join('\n')}`;
    });
    assert.deepEqual(found, [], `import cycles between rooms:\n${why.join('\n')}`);
  });

  it('has the foundation (top of src/, src/gen/) import no room', () => {
    const files = fileGraph();
    const up = [...files].flatMap(([f, ts]) => (roomOf(f, rooms) === 'base' ? [...ts].filter((t) => roomOf(t, rooms) !== 'base').map((t) => `${f} -> ${t}`) : []));
    assert.deepEqual(up, [], `the foundation imports rooms:\n${up.join('\n')}`);
  });

  it('names the files of a planted cycle, and finds none in a chain', () => {
    const planted = graphOf([
      ['src/a.ts', 'src/b.ts'],
      ['src/b.ts', 'src/c.ts'],
      ['src/c.ts', 'src/a.ts'],
      ['src/c.ts', 'src/d.ts'],
      ['src/e.ts', 'src/e.ts'],
    ]);
    assert.deepEqual(cycles(planted), [['src/a.ts', 'src/b.ts', 'src/c.ts'], ['src/e.ts']]);
    assert.deepEqual(cycles(graphOf([['src/a.ts', 'src/b.ts'], ['src/b.ts', 'src/c.ts'], ['src/a.ts', 'src/c.ts']])), []);
  });

  it('finds a cycle between rooms that no two files close', () => {
    const files = graphOf([
      ['src/engine/x.ts', 'src/runtime/types.ts'],
      ['src/runtime/types.ts', 'src/clock.ts'],
      ['src/runtime/other.ts', 'src/engine/y.ts'],
      ['src/runtime/cri/z.ts', 'src/runtime/types.ts'],
    ]);
    assert.deepEqual(cycles(files), []);
    assert.deepEqual(cycles(roomGraph(files, rooms)), [['engine', 'runtime']]);
    assert.equal(roomOf('src/runtime/cri/z.ts', rooms), 'runtime/cri');
    assert.equal(roomOf('src/gen/agent.ts', rooms), 'base');
  });

  it('reads every kind of relative import', () => {
    const code = [
      "import { a } from './a.js';",
      "import type { B } from '../b.js';",
      "import {\n  c,\n  d,\n} from './cd.js';",
      "export { e } from './e.js';",
      "export * from './f.js';",
      "import './g.js';",
      "const h = await import('./h.js');",
      "import { z } from 'node:fs';",
    ].join('\n');
    assert.deepEqual(relativeImports(code).sort(), ['../b.js', './a.js', './cd.js', './e.js', './f.js', './g.js', './h.js']);
  });
});
