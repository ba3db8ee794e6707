/**
 * The layers of DESIGN.md section 1, read from the sources: every import of every file in src/
 * (static, `import type`, `export ... from`, and `import('...')`) points down to its own layer or a
 * lower one, the emulator shares only src/spec and src/util and is started by src/cli alone, and no
 * files import each other around a ring. A failure names the file, the import and the rule.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli-process.js';

/** Lowest first; a folder may import its own layer and any lower one. */
const LAYERS: Record<string, number> = {
  types: 0, // .d.ts declarations of packages that ship none
  util: 0,
  spec: 1,
  client: 2,
  sources: 3,
  sinks: 3,
  stages: 4,
  archive: 5,
  pipelines: 6,
  'pipeline-files': 7,
  webhooks: 7,
  schedule: 8,
  fleet: 9,
  cli: 10,
  index: 10,
};

const ONE_WAY = 'DESIGN.md section 1: imports point one way, from cli down to util';
const EMULATOR_APART = 'DESIGN.md section 1: the emulator is its own server and shares only src/spec (and src/util)';
const EMULATOR_STARTED_BY_CLI = 'DESIGN.md section 1: only the CLI (and `npm start`, src/cli/start.ts) starts the emulator';
const SINKS_BELOW_SOURCES = 'DESIGN.md section 1: sources may read what sinks write, sinks never import sources';
const NO_RING = 'DESIGN.md section 1: imports point one way, so no files import each other, directly or around a ring';

/** An import from one file of src/ to another, paths relative to src/ with `/`. */
interface Edge {
  from: string;
  to: string;
  specifier: string;
}

/** The folder under src/ a file belongs to; `index` for src/index.ts. */
function folderOf(path: string): string {
  const first = path.split('/')[0]!;
  return first.endsWith('.ts') ? first.replace(/\.ts$/, '') : first;
}

/** Every relative import of each file, resolved to the file it names (`.js` is the `.ts` beside it). */
function importsOf(files: Map<string, string>): Edge[] {
  const edges: Edge[] = [];
  for (const [from, text] of files) {
    // A module imported twice (statically and by `import()`, say) is one edge.
    const specifiers = new Set(ts.preProcessFile(text, true, true).importedFiles.map(({ fileName }) => fileName));
    for (const specifier of specifiers) {
      if (!specifier.startsWith('.')) continue;
      const to = posix.normalize(posix.join(posix.dirname(from), specifier)).replace(/\.js$/, '.ts');
      if (to.startsWith('..')) continue; // outside src/ (package.json and the like)
      edges.push({ from, to, specifier });
    }
  }
  return edges;
}

/** The imports that break a rule of the layers, each said as `file imports 'specifier': why (rule)`. */
function layerProblems(edges: Edge[]): string[] {
  const problems: string[] = [];
  for (const { from, to, specifier } of edges) {
    const a = folderOf(from);
    const b = folderOf(to);
    const say = (why: string, rule: string): void => {
      problems.push(`src/${from} imports '${specifier}' (src/${to}): ${why} (${rule})`);
    };
    if (a === b) continue;
    if (a === 'emulator') {
      if (b !== 'spec' && b !== 'util') say(`the emulator may import only spec and util, not ${b}`, EMULATOR_APART);
      continue;
    }
    if (b === 'emulator') {
      if (a !== 'cli') say(`${a} may not import the emulator`, EMULATOR_STARTED_BY_CLI);
      continue;
    }
    const la = LAYERS[a];
    const lb = LAYERS[b];
    if (la === undefined || lb === undefined) {
      say(`src/${la === undefined ? a : b} has no layer in the list of this test`, ONE_WAY);
      continue;
    }
    if (a === 'sinks' && b === 'sources') say('sinks may not import sources', SINKS_BELOW_SOURCES);
    else if (lb > la) say(`${a} (layer ${la}) may not import ${b} (layer ${lb})`, ONE_WAY);
  }
  return problems;
}

/** Each ring of imports (a strongly connected set of more than one file), said as one path around it. */
function importRings(edges: Edge[]): string[] {
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) {
    if (from === to) continue;
    const list = next.get(from) ?? [];
    if (!list.includes(to)) list.push(to);
    next.set(from, list);
  }
  // Tarjan's strongly connected components.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const rings: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const ring: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      ring.push(w);
    } while (w !== v);
    if (ring.length > 1) rings.push(ring);
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);

  return rings.map((ring) => {
    const members = new Set(ring);
    const start = [...ring].sort()[0]!;
    // The shortest way from the first file back to itself, inside the ring.
    const came = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0) {
      const v = queue.shift()!;
      if (v === start && came.has(start)) break;
      for (const w of next.get(v) ?? []) {
        if (!members.has(w) || came.has(w)) continue;
        came.set(w, v);
        queue.push(w);
      }
    }
    const path = [start];
    for (let v = came.get(start)!; v !== start; v = came.get(v)!) path.unshift(v);
    path.unshift(start);
    const others = [...members].filter((file) => !path.includes(file)).sort();
    const also = others.length > 0 ? `; also in the ring: ${others.map((file) => `src/${file}`).join(', ')}` : '';
    return `${path.map((file) => `src/${file}`).join(' → ')}${also} (${NO_RING})`;
  });
}

function sources(): Map<string, string> {
  const src = join(ROOT, 'src');
  const files = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) files.set(relative(src, path).split('\\').join('/'), readFileSync(path, 'utf8'));
    }
  };
  walk(src);
  return files;
}

describe('the layers of src/', () => {
  const files = sources();
  const edges = importsOf(files);

  it('reads the imports of every file', () => {
    expect(files.size).toBeGreaterThan(100);
    // Every import names a file that is there: an import this reader resolved wrongly would slip
    // past both checks below.
    const missing = edges.filter(({ to }) => !files.has(to) && !files.has(to.replace(/\.ts$/, '.d.ts')));
    expect(missing.map(({ from, specifier }) => `src/${from} imports '${specifier}'`)).toEqual([]);
    for (const folder of new Set([...files.keys()].map(folderOf))) {
      expect(folder === 'emulator' || folder in LAYERS, `src/${folder} has a layer here`).toBe(true);
    }
  });

  it('has no import that runs upwards, into the emulator or out of it', () => {
    expect(layerProblems(edges)).toEqual([]);
  });

  it('has no import cycle between files', () => {
    expect(importRings(edges)).toEqual([]);
  });

  it('sees every form of import, and says which rule a bad one breaks', () => {
    const made = new Map([
      ['sinks/a.ts', "import type { B } from '../stages/b.js';\nexport const a = 1;"],
      ['stages/b.ts', "export { a } from '../sinks/a.js';\nexport type B = number;"],
      ['sinks/c.ts', "const s = await import('../sources/d.js');"],
      ['pipeline-files/e.ts', "let x: typeof import('../emulator/f.js');"],
      ['emulator/f.ts', "import {\n  g,\n} from '../client/g.js';"],
      ['util/h.ts', "// import { i } from '../cli/i.js';\nexport const h = 'import { j } from \"../cli/j.js\"';"],
    ]);
    const found = importsOf(made);
    expect(layerProblems(found)).toEqual([
      `src/sinks/a.ts imports '../stages/b.js' (src/stages/b.ts): sinks (layer 3) may not import stages (layer 4) (${ONE_WAY})`,
      `src/sinks/c.ts imports '../sources/d.js' (src/sources/d.ts): sinks may not import sources (${SINKS_BELOW_SOURCES})`,
      `src/pipeline-files/e.ts imports '../emulator/f.js' (src/emulator/f.ts): pipeline-files may not import the emulator (${EMULATOR_STARTED_BY_CLI})`,
      `src/emulator/f.ts imports '../client/g.js' (src/client/g.ts): the emulator may import only spec and util, not client (${EMULATOR_APART})`,
    ]);
    expect(importRings(found)).toEqual([`src/sinks/a.ts → src/stages/b.ts → src/sinks/a.ts (${NO_RING})`]);
  });
});
