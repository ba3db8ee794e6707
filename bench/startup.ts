/**
 * Start-up benchmark: what the shipped CLI (`node dist/cli/main.js`, built first with `npm run
 * build`) costs before it does any work: wall time and peak RSS (wait4, bench/max-rss.ts) of
 * `--version`, `--help`, `photos export --help`, and a small photo export to a folder against an
 * emulator in a process of its own (its CPU and memory are not counted). Medians of the runs, with
 * the fastest and slowest beside them, and the wall time of each command's first run, which finds
 * no code cache (src/cli/code-cache.ts) and writes it: the runs share a cache folder of their own,
 * as a user's runs share `~/.cache`, and the first run of each command is not among the others.
 *
 *   npx tsx bench/startup.ts                                 this tree, 7 runs of each command
 *   npx tsx bench/startup.ts --dist /tmp/base/dist           A/B: another tree's built CLI too
 *   npx tsx bench/startup.ts --runs 15 --photos 30 --no-build
 *
 * With --dist (repeatable), each run measures every CLI in turn, so that the load of a shared
 * machine falls on all of them alike. Another tree is made with `git worktree add /tmp/base REV`,
 * `ln -s "$PWD/node_modules" /tmp/base/node_modules` and `npm run build` there.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { measure, type Measured } from './max-rss.js';
import { CLI, ROOT, ensureBuilt } from './shipped-cli.js';

const argValue = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const argValues = (name: string): string[] => process.argv.flatMap((arg, i) => (arg === `--${name}` && process.argv[i + 1] ? [process.argv[i + 1]!] : []));

const RUNS = Number(argValue('runs') ?? 7);
const PHOTOS = Number(argValue('photos') ?? 30);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs must be a whole number of 1 or more, got ${argValue('runs')}`);
if (!Number.isInteger(PHOTOS) || PHOTOS < 1) throw new Error(`--photos must be a whole number of 1 or more, got ${argValue('photos')}`);

interface Cli { label: string; main: string }

const others: Cli[] = argValues('dist').map((dist) => {
  const main = join(resolve(dist), 'cli', 'main.js');
  if (!existsSync(main)) throw new Error(`--dist ${dist}: ${main} is missing; build that tree first (npm run build)`);
  return { label: dist, main };
});
const built = ensureBuilt(!process.argv.includes('--no-build'));
const clis: Cli[] = [{ label: `this tree (${built})`, main: CLI }, ...others];

interface Emulator { baseUrl: string; child: ChildProcess }

/** The emulator of bench/export, in a child: a company of PHOTOS members with a photo of 20 KB each. */
async function startEmulator(): Promise<Emulator> {
  const generate = { members: PHOTOS, photo_bytes: [20_000, 20_000], photo_ratio: 1, attachments_per_member: [0, 0] };
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'emulator-child.ts'), JSON.stringify(generate)], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  const first = await new Promise<string>((resolveLine, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolveLine);
    child.once('exit', (code) => reject(new Error(`the emulator exited with ${code} before it listened`)));
  });
  return { baseUrl: (JSON.parse(first) as { base_url: string }).base_url, child };
}

async function stopEmulator(emulator: Emulator): Promise<void> {
  if (emulator.child.exitCode !== null || emulator.child.signalCode !== null) return;
  const exited = new Promise((resolveExit) => emulator.child.once('exit', resolveExit));
  emulator.child.kill('SIGTERM');
  await exited;
}

interface Case { name: string; args: (out: string) => string[] }

const emulator = await startEmulator();
const work = await mkdtemp(join(tmpdir(), 'wds-startup-'));
const env: NodeJS.ProcessEnv = { ...process.env, WDS_CONSUMER_KEY: 'demo-key', WDS_CONSUMER_SECRET: 'demo-secret', NO_COLOR: '1', XDG_CACHE_HOME: join(work, 'cache') };
delete env.WDS_BASE_URL;
const cases: Case[] = [
  { name: '--version', args: () => ['--version'] },
  { name: '--help', args: () => ['--help'] },
  { name: 'photos export --help', args: () => ['photos', 'export', '--help'] },
  { name: `photos export (${PHOTOS} photos, folder)`, args: (out) => ['photos', 'export', '-o', out, '--base-url', emulator.baseUrl, '-q'] },
];

const samples = new Map<string, Measured[]>();
/** Each command's first run, with no code cache yet. */
const firsts = new Map<string, Measured>();
const key = (c: Case, cli: Cli): string => `${c.name}\u0000${cli.label}`;

try {
  for (let run = -1; run < RUNS; run += 1) {
    for (const c of cases) {
      for (const cli of clis) {
        const out = join(work, `out-${run}-${clis.indexOf(cli)}`);
        const m = await measure(process.execPath, [cli.main, ...c.args(out)], { cwd: work, env });
        if (m.code !== 0) throw new Error(`${cli.label}: wds-files ${c.args(out).join(' ')} exited with ${m.code ?? `signal ${m.signal}`}:\n${m.stderr}`);
        if (run < 0) firsts.set(key(c, cli), m);
        else samples.set(key(c, cli), [...(samples.get(key(c, cli)) ?? []), m]);
        await rm(out, { recursive: true, force: true });
      }
    }
  }
} finally {
  await stopEmulator(emulator);
  await rm(work, { recursive: true, force: true });
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

console.log(`start-up of the shipped CLI (node ${process.version}); ${RUNS} runs each, medians (fastest-slowest)`);
const letter = (cli: Cli): string => String.fromCharCode(65 + clis.indexOf(cli));
for (const cli of clis) console.log(`  ${letter(cli)}: ${cli.label}`);
console.log(`${'command'.padEnd(36)}${'cli'.padEnd(5)}${'wall ms'.padStart(20)}${'peak RSS MB'.padStart(20)}${'CPU ms'.padStart(10)}${'first run ms'.padStart(14)}`);
for (const c of cases) {
  for (const cli of clis) {
    const s = samples.get(key(c, cli))!;
    const ms = s.map((m) => m.ms);
    const mb = s.map((m) => m.maxRssKb / 1024);
    const cpu = s.map((m) => (m.userS + m.systemS) * 1000);
    console.log(`${c.name.padEnd(36)}${letter(cli).padEnd(5)}${`${median(ms).toFixed(0)} (${Math.min(...ms).toFixed(0)}-${Math.max(...ms).toFixed(0)})`.padStart(20)}${`${median(mb).toFixed(1)} (${Math.min(...mb).toFixed(0)}-${Math.max(...mb).toFixed(0)})`.padStart(20)}${median(cpu).toFixed(0).padStart(10)}${firsts.get(key(c, cli))!.ms.toFixed(0).padStart(14)}`);
  }
}
