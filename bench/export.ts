/**
 * Export benchmark: the shipped CLI (`node dist/cli/main.js photos export`, built first with
 * `npm run build`) against `aria2c -j16` and `curl -Z --parallel-max 16` over the same freshly
 * listed URLs, on generated companies served by an emulator in a process of its own (its CPU and
 * memory are not counted), with storage latency 0 and 20 ms.
 *
 *   npx tsx bench/export.ts                      every set, 3 runs each, medians
 *   npx tsx bench/export.ts --sets photos,mix,photos-large,mix-large --latencies 20
 *   npx tsx bench/export.ts --sweep              our export at concurrency 8/16/32/64, 20 ms latency
 *   npx tsx bench/export.ts --no-peers --no-zip
 *   npx tsx bench/export.ts --warmup 0           no untimed export before each set and latency
 *   npx tsx bench/export.ts --no-build           use dist/ as it is
 *   npx tsx bench/export.ts --cli DIR/cli/main.js  a build of its own (`npx tsc -p tsconfig.build.json
 *                                                --outDir DIR`, DIR one folder below a package.json, as
 *                                                dist/ is), which a `npm run build` elsewhere cannot remove
 *   npx tsx bench/export.ts --files 2000,20000,200000
 *                                                as the company grows: a photo export to a folder and an
 *                                                attachment export to a folder and to a zip at each size
 *                                                (photos of 20 KB; two attachments of 5 KB a member), one
 *                                                run each unless --runs; prints time a file and peak RSS
 *                                                against the targets (200 MB; time a file at the largest
 *                                                size within 1.2 x its value at 20,000), the emulator's
 *                                                own start time and peak RSS at each size, and uptime
 *   npx tsx bench/export.ts --files 2000,20000 --rerun
 *                                                also the attachment export run again into the folder
 *                                                and the zip it made (nothing changed: every file kept),
 *                                                as a nightly export to the same place runs
 *   npx tsx bench/export.ts --files 50 --no-build  a quick check that the bench runs
 *
 * Sets: `photos` (2,000 photos of 100 KB), `mix` (2,000 photos of the generated company's default
 * sizes, 20 to 500 KB), `photos-large` and `mix-large` (the same with 20,000 photos), `large`
 * (20,000 photos of 20 KB), `attachments` (200 PDFs of 5 MB).
 *
 * Every tool runs as a child process measured as `/usr/bin/time` measures (bench/max-rss.ts):
 * wall time, maximum resident set and CPU seconds from wait4. Our wall time is the whole command
 * as a user runs it (start-up, token, listing, downloads, manifest); the peers' starts after the
 * URLs were listed for them. Wall times are medians, with the fastest and slowest run beside them,
 * since on a shared machine the same export varies from run to run.
 *
 * Between runs the files a run wrote are emptied, not deleted, and all of them go at the end:
 * deleting thousands of files slows the creation of the next run's files (ext4 skips recently
 * freed inodes), a cost a user's export does not pay.
 * Install the peers with `apt-get install aria2 curl`; python3 measures the processes.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import yauzl from 'yauzl';
import { WdsClient } from '../src/client/client.js';
import { UrlLister, attachmentTargets, type ListTarget } from '../src/stages/export/list-urls.js';
import { DEFAULT_EXPORT_CONCURRENCY, PHOTO_EXPORT_CONCURRENCY, defaultConcurrency } from '../src/pipelines/export.js';
import { measure, type Measured } from './max-rss.js';
import { CLI, ensureBuilt } from './shipped-cli.js';
import { removeTree } from '../src/util/remove-tree.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const PEER_CONCURRENCY = 16;

interface BenchSet {
  name: string;
  what: 'photos' | 'attachments';
  files: number;
  /** Known in advance for sets of one size; for the mixes, the first run's total, which every other run must match. */
  bytes?: number;
  generate: Record<string, unknown>;
  peers: boolean;
}

/** Photos only, at the generated company's default sizes (20 to 500 KB). */
const mix = (members: number): Record<string, unknown> => ({ members, photo_ratio: 1, attachments_per_member: [0, 0] });
const photosOf = (members: number, bytes: number): Record<string, unknown> => ({ members, photo_bytes: [bytes, bytes], photo_ratio: 1, attachments_per_member: [0, 0] });

const SETS: Record<string, BenchSet> = {
  photos: { name: 'photos', what: 'photos', files: 2000, bytes: 2000 * 100_000, peers: true, generate: photosOf(2000, 100_000) },
  mix: { name: 'mix', what: 'photos', files: 2000, peers: true, generate: mix(2000) },
  'photos-large': { name: 'photos-large', what: 'photos', files: 20_000, bytes: 20_000 * 100_000, peers: true, generate: photosOf(20_000, 100_000) },
  'mix-large': { name: 'mix-large', what: 'photos', files: 20_000, peers: true, generate: mix(20_000) },
  attachments: {
    name: 'attachments', what: 'attachments', files: 200, bytes: 200 * 5_000_000, peers: true,
    generate: { members: 200, photo_ratio: 0, attachments_per_member: [1, 1], attachment_bytes: [5_000_000, 5_000_000] },
  },
  large: { name: 'large', what: 'photos', files: 20_000, bytes: 20_000 * 20_000, peers: false, generate: photosOf(20_000, 20_000) },
};

// ---------------------------------------------------------------------------------------------
// Arguments

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const flag = (name: string): boolean => process.argv.includes(`--${name}`);
const list = (name: string, fallback: string): string[] => (argValue(name) ?? fallback).split(',').filter(Boolean);

const sweep = flag('sweep');
/** Company sizes of the scaling sets (`--files 2000,20000,200000`); the named sets without it. */
const SIZES = argValue('files') === undefined ? undefined : argValue('files')!.split(',').map((n) => Number(n.replaceAll('_', '')));
if (SIZES && !SIZES.every((n) => Number.isInteger(n) && n >= 2)) throw new Error(`--files must be whole numbers of 2 or more, separated by commas, got ${argValue('files')}`);
const runs = Number(argValue('runs') ?? (SIZES ? 1 : 3));
const warmups = Number(argValue('warmup') ?? (argValue('files') === undefined ? 1 : 0));
/** Photos of 20 KB, and attachments of 5 KB two a member (file counts as asked): the files' count, not their bytes, is what grows. */
const SCALE_PHOTO_BYTES = 20_000;
const SCALE_ATTACHMENT_BYTES = 5_000;
for (const files of SIZES ?? []) {
  SETS[`photos-${files}`] = { name: `photos-${files}`, what: 'photos', files, bytes: files * SCALE_PHOTO_BYTES, peers: false, generate: photosOf(files, SCALE_PHOTO_BYTES) };
  SETS[`attachments-${files}`] = {
    name: `attachments-${files}`, what: 'attachments', files: 2 * Math.ceil(files / 2), bytes: 2 * Math.ceil(files / 2) * SCALE_ATTACHMENT_BYTES, peers: false,
    generate: { members: Math.ceil(files / 2), photo_ratio: 0, attachments_per_member: [2, 2], attachment_bytes: [SCALE_ATTACHMENT_BYTES, SCALE_ATTACHMENT_BYTES] },
  };
}
const setNames = SIZES ? SIZES.flatMap((n) => [`photos-${n}`, `attachments-${n}`])
  : list('sets', sweep ? 'photos,attachments' : 'photos,mix,photos-large,mix-large,attachments,large');
const cliArg = argValue('cli') === undefined ? undefined : resolve(argValue('cli')!);
const build = !flag('no-build') && cliArg === undefined;
const latencies = list('latencies', sweep ? '20' : SIZES ? '0' : '0,20').map(Number);
const sweepConcurrency = list('concurrency', '8,16,32,64').map(Number);
const withPeers = !flag('no-peers') && !sweep && !SIZES;
const withZip = !flag('no-zip') && !sweep;
/** Scaling mode: the attachment export again into what its first run made. */
const rerun = flag('rerun') && SIZES !== undefined;
for (const name of setNames) if (!SETS[name]) throw new Error(`unknown set ${name}; sets: ${Object.keys(SETS).join(', ')}`);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a whole number, got ${runs}`);
if (!Number.isInteger(warmups) || warmups < 0) throw new Error(`--warmup must be a whole number, got ${warmups}`);

// ---------------------------------------------------------------------------------------------
// Processes

interface Emulator {
  baseUrl: string;
  consumerKey: string;
  consumerSecret: string;
  child: ChildProcess;
  /** From its spawn to its first line (the company generated, the server listening), ms. */
  startMs: number;
}

/** The emulator's own figures for a set: its start and its peak resident set (VmHWM), read before it stops. */
interface EmulatorFigures {
  set: string;
  files: number;
  startMs: number;
  peakKb: number;
}

/** The peak resident set of a running process, kB, from /proc (0 where there is none). */
async function peakRssKb(pid: number | undefined): Promise<number> {
  const status = pid === undefined ? '' : await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
}

async function startEmulatorChild(set: BenchSet): Promise<Emulator> {
  const spawned = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', join(HERE, 'emulator-child.ts'), JSON.stringify(set.generate)], {
    cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the emulator exited with ${code} before it listened`)));
  });
  const info = JSON.parse(first) as { base_url: string; consumer_key: string; consumer_secret: string };
  return { baseUrl: info.base_url, consumerKey: info.consumer_key, consumerSecret: info.consumer_secret, child, startMs: performance.now() - spawned };
}

async function stopEmulatorChild(emulator: Emulator): Promise<void> {
  if (emulator.child.exitCode !== null || emulator.child.signalCode !== null) return;
  const exited = new Promise((resolve) => emulator.child.once('exit', resolve));
  emulator.child.kill('SIGTERM');
  await exited;
}

async function setLatency(emulator: Emulator, latencyMs: number): Promise<void> {
  const res = await request(`${emulator.baseUrl}/_emulator/faults`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ storage: { latency_ms: latencyMs } }),
  });
  if (res.statusCode !== 200) throw new Error(`setting the storage latency answered ${res.statusCode}: ${await res.body.text()}`);
  await res.body.dump();
}

const have = (tool: string): boolean => spawnSync(tool, ['--version'], { stdio: 'ignore' }).status === 0;

function mustSucceed(tool: string, run: Measured): void {
  if (run.code !== 0) throw new Error(`${tool} ${run.signal ? `was ended by signal ${run.signal}` : `exited with ${run.code}`}:\n${run.stdout}${run.stderr}`);
}

// ---------------------------------------------------------------------------------------------
// Runs

interface Sample {
  set: string;
  latency: number;
  tool: string;
  concurrency: number;
  files: number;
  bytes: number;
  ms: number;
  /** Maximum resident set, kB, from wait4. */
  peakKb: number;
  /** CPU seconds, user and system. */
  cpuS: number;
}

/** Empties every file under `dir` (their pages go back, their inodes stay until the end). */
async function releaseData(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) await truncate(join(entry.parentPath, entry.name), 0);
  }
}

async function folderTotals(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name === 'manifest.jsonl' || entry.name.endsWith('.aria2')) continue;
    files += 1;
    bytes += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return { files, bytes };
}

/** Totals of the mixes, taken from their first complete run. */
const mixBytes = new Map<string, number>();

function check(set: BenchSet, tool: string, got: { files: number; bytes: number }): void {
  const bytes = set.bytes ?? mixBytes.get(set.name) ?? (got.files === set.files ? got.bytes : undefined);
  if (set.bytes === undefined && bytes !== undefined) mixBytes.set(set.name, bytes);
  if (got.files !== set.files || got.bytes !== bytes) {
    throw new Error(`${tool} on ${set.name}: expected ${set.files} files of ${bytes ?? '?'} bytes, got ${got.files} files of ${got.bytes} bytes`);
  }
}

async function runOurs(emulator: Emulator, set: BenchSet, work: string, concurrency: number, sink: 'folder' | 'zip'): Promise<Omit<Sample, 'set' | 'latency' | 'tool'>> {
  const out = join(work, sink === 'zip' ? 'out.zip' : 'out');
  // The default is left to the CLI, as a user leaves it.
  const args = [cliArg ?? CLI, set.what, 'export', '--out', out, '--json', ...(concurrency === defaultConcurrency(set.what) ? [] : ['--concurrency', String(concurrency)])];
  const env = {
    ...process.env,
    WDS_BASE_URL: emulator.baseUrl, WDS_CONSUMER_KEY: emulator.consumerKey, WDS_CONSUMER_SECRET: emulator.consumerSecret,
    XDG_CACHE_HOME: join(work, 'cache'), XDG_STATE_HOME: join(work, 'state'),
  };
  const exit = await measure(process.execPath, args, { cwd: work, env });
  mustSucceed(`our export (${sink})`, exit);
  const summary = JSON.parse(exit.stdout.trim().split('\n').pop()!) as { counts: { ok: number; failed: number }; bytes: number };
  const result = { files: summary.counts.ok, bytes: summary.bytes };
  check(set, `ours (${sink})`, result);
  if (sink === 'folder') check(set, 'ours (folder on disk)', await folderTotals(out));
  // Photos do not compress; generated attachments (PDFs and CSVs of repeated padding) do.
  else if (set.what === 'photos' && (await stat(out)).size < result.bytes) throw new Error(`the zip is smaller than its files: ${(await stat(out)).size}`);
  if (sink === 'zip') {
    // The central directory names every file and the manifest (zip64 past 65,535 entries).
    const entries = await zipEntryCount(out);
    if (entries !== result.files + 1) throw new Error(`the zip's central directory has ${entries} entries, not ${result.files} files and the manifest`);
  }
  return { concurrency, ...result, ms: exit.ms, peakKb: exit.maxRssKb, cpuS: exit.userS + exit.systemS };
}

/** Our export run twice into the same place, the second measured: every file is kept, none downloaded. */
async function runOursAgain(emulator: Emulator, set: BenchSet, work: string, sink: 'folder' | 'zip'): Promise<Omit<Sample, 'set' | 'latency' | 'tool'>> {
  await runOurs(emulator, set, work, defaultConcurrency(set.what), sink);
  const out = join(work, sink === 'zip' ? 'out.zip' : 'out');
  const args = [cliArg ?? CLI, set.what, 'export', '--out', out, '--json'];
  const env = {
    ...process.env,
    WDS_BASE_URL: emulator.baseUrl, WDS_CONSUMER_KEY: emulator.consumerKey, WDS_CONSUMER_SECRET: emulator.consumerSecret,
    XDG_CACHE_HOME: join(work, 'cache'), XDG_STATE_HOME: join(work, 'state'),
  };
  const exit = await measure(process.execPath, args, { cwd: work, env });
  mustSucceed(`our export run again (${sink})`, exit);
  const summary = JSON.parse(exit.stdout.trim().split('\n').pop()!) as { counts: { ok: number; skipped?: number; failed: number } };
  if (summary.counts.ok !== 0 || summary.counts.skipped !== set.files) {
    throw new Error(`our export run again (${sink}) on ${set.name}: expected ${set.files} files kept and none downloaded, got ${JSON.stringify(summary.counts)}`);
  }
  if (sink === 'folder') check(set, 'ours (folder rerun, on disk)', await folderTotals(out));
  return { concurrency: defaultConcurrency(set.what), files: set.files, bytes: 0, ms: exit.ms, peakKb: exit.maxRssKb, cpuS: exit.userS + exit.systemS };
}

/** Entries of a zip, from its end of central directory, as a reader finds them. */
function zipEntryCount(file: string): Promise<number> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true, autoClose: false }, (error, zip) => {
      if (error || !zip) return reject(error ?? new Error(`${file} did not open as a zip`));
      const count = zip.entryCount;
      zip.close();
      resolve(count);
    });
  });
}

async function listFresh(emulator: Emulator, set: BenchSet): Promise<{ url: string; name: string }[]> {
  const client = new WdsClient({ baseUrl: emulator.baseUrl, consumerKey: emulator.consumerKey, consumerSecret: emulator.consumerSecret, stateFile: false });
  try {
    const targets: ListTarget[] = set.what === 'photos' ? [{ id: 'photos', kind: 'photo' }] : await attachmentTargets(client);
    const files = await new UrlLister(client, targets).listAll();
    // Names by position: the peers only need distinct names, and the bytes are what is compared.
    return files.map((f, i) => ({ url: f.url, name: `${String(i).padStart(6, '0')}-${f.code}.${f.file_name.split('.').pop()}` }));
  } finally {
    await client.close();
  }
}

async function runAria2(emulator: Emulator, set: BenchSet, work: string): Promise<Omit<Sample, 'set' | 'latency' | 'tool'>> {
  const files = await listFresh(emulator, set);
  const out = join(work, 'out');
  await mkdir(out, { recursive: true });
  const input = join(work, 'aria2-input.txt');
  await writeFile(input, files.map((f) => `${f.url}\n  out=${f.name}\n`).join(''));
  const exit = await measure('aria2c', [
    `-j${PEER_CONCURRENCY}`, '-i', input, '-d', out, '--file-allocation=none', '--allow-overwrite=true', '--auto-file-renaming=false',
    '--console-log-level=warn', '--summary-interval=0', '--download-result=hide', '--quiet=true',
  ], { cwd: work });
  mustSucceed('aria2c', exit);
  const got = await folderTotals(out);
  check(set, 'aria2c', got);
  return { concurrency: PEER_CONCURRENCY, ...got, ms: exit.ms, peakKb: exit.maxRssKb, cpuS: exit.userS + exit.systemS };
}

async function runCurl(emulator: Emulator, set: BenchSet, work: string): Promise<Omit<Sample, 'set' | 'latency' | 'tool'>> {
  const files = await listFresh(emulator, set);
  const out = join(work, 'out');
  await mkdir(out, { recursive: true });
  const config = join(work, 'curl.cfg');
  await writeFile(config, files.map((f) => `url = "${f.url}"\noutput = "${join(out, f.name)}"\n`).join(''));
  const exit = await measure('curl', ['-Z', '--parallel-max', String(PEER_CONCURRENCY), '-s', '-S', '--fail', '-K', config], { cwd: work });
  mustSucceed('curl', exit);
  const got = await folderTotals(out);
  check(set, 'curl', got);
  return { concurrency: PEER_CONCURRENCY, ...got, ms: exit.ms, peakKb: exit.maxRssKb, cpuS: exit.userS + exit.systemS };
}

// ---------------------------------------------------------------------------------------------
// Report

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

interface Row {
  set: string;
  latency: number;
  tool: string;
  concurrency: number;
  files: number;
  mb: number;
  wallS: number;
  /** Fastest and slowest run, seconds: the spread between runs on a shared machine. */
  minWallS: number;
  maxWallS: number;
  mbPerS: number;
  peakMb: number;
  maxPeakMb: number;
  /** CPU seconds of the process, user and system, median. */
  cpuS: number;
  runs: number;
}

function summarise(samples: Sample[]): Row[] {
  const groups = new Map<string, Sample[]>();
  for (const s of samples) {
    const key = `${s.set}|${s.latency}|${s.tool}|${s.concurrency}`;
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  return [...groups.values()].map((g) => {
    const first = g[0]!;
    const wallS = median(g.map((s) => s.ms)) / 1000;
    const peaks = g.map((s) => s.peakKb);
    return {
      set: first.set, latency: first.latency, tool: first.tool, concurrency: first.concurrency, files: first.files,
      mb: first.bytes / 1e6, wallS, minWallS: Math.min(...g.map((s) => s.ms)) / 1000, maxWallS: Math.max(...g.map((s) => s.ms)) / 1000, mbPerS: first.bytes / 1e6 / wallS,
      peakMb: median(peaks) / 1024, maxPeakMb: Math.max(...peaks) / 1024, cpuS: median(g.map((s) => s.cpuS)), runs: g.length,
    };
  });
}

function table(rows: Row[]): string {
  const header = ['set', 'latency', 'tool', 'conc', 'files', 'MB', 'wall s', 'min-max s', 'MB/s', 'peak RSS MB', 'max RSS MB', 'CPU s', 'runs'];
  const body = rows.map((r) => [
    r.set, `${r.latency} ms`, r.tool, String(r.concurrency), String(r.files), r.mb.toFixed(0), r.wallS.toFixed(2), `${r.minWallS.toFixed(2)}-${r.maxWallS.toFixed(2)}`, r.mbPerS.toFixed(0),
    r.peakMb.toFixed(0), r.maxPeakMb.toFixed(0), r.cpuS.toFixed(2), String(r.runs),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i >= 3 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/** The memory bound of our export at its default concurrency, per set and latency. */
const RSS_BOUND_MB = 150;

function bounds(rows: Row[]): string[] {
  return rows.filter((r) => r.tool.startsWith('ours') && r.concurrency === defaultConcurrency(SETS[r.set]!.what)).map((r) =>
    `${r.set}, ${r.latency} ms, ${r.tool}: max RSS ${r.maxPeakMb.toFixed(0)} MB over ${r.runs} runs (bound ${RSS_BOUND_MB} MB: ${r.maxPeakMb <= RSS_BOUND_MB ? 'met' : 'NOT met'})`);
}

function ratios(rows: Row[]): string[] {
  const out: string[] = [];
  const find = (set: string, latency: number, tool: string, concurrency?: number): Row | undefined =>
    rows.find((r) => r.set === set && r.latency === latency && r.tool === tool && (concurrency === undefined || r.concurrency === concurrency));
  const keys = new Set(rows.map((r) => `${r.set}|${r.latency}`));
  for (const key of keys) {
    const [set, latencyText] = key.split('|') as [string, string];
    const latency = Number(latencyText);
    const ours = find(set, latency, 'ours', defaultConcurrency(SETS[set]!.what));
    const ours16 = find(set, latency, 'ours', PEER_CONCURRENCY);
    const aria2 = find(set, latency, 'aria2c');
    const curl = find(set, latency, 'curl');
    const parts: string[] = [];
    if (ours && aria2) parts.push(`aria2/ours ${(aria2.wallS / ours.wallS).toFixed(2)} (ours at its default concurrency ${ours.concurrency})`);
    if (ours16 && curl) parts.push(`curl/ours ${(curl.wallS / ours16.wallS).toFixed(2)} (both at concurrency ${PEER_CONCURRENCY})`);
    if (parts.length) out.push(`${set}, ${latency} ms: ${parts.join('; ')}`);
  }
  return out;
}

/** Peak RSS of the shipped CLI at any size, and time a file at the largest size against 20,000 files' (issue 46). */
const SCALE_RSS_MB = 200;
const SCALE_TIME_RATIO = 1.2;

/** By command: files, peak RSS and time a file at each size, against the targets. */
function scaling(rows: Row[], sizes: number[]): string[] {
  const out = ['command                          files    peak RSS MB   ms a file'];
  const commands: { label: string; what: 'photos' | 'attachments'; tool: string }[] = [
    { label: 'photos export, folder', what: 'photos', tool: 'ours' },
    { label: 'attachments export, folder', what: 'attachments', tool: 'ours' },
    { label: 'attachments export, zip', what: 'attachments', tool: 'ours (zip)' },
    { label: 'attachments again, folder', what: 'attachments', tool: 'ours (folder rerun)' },
    { label: 'attachments again, zip', what: 'attachments', tool: 'ours (zip rerun)' },
  ];
  for (const { label, what, tool } of commands) {
    const at = sizes.map((n) => rows.find((r) => r.set === `${what}-${n}` && r.tool === tool)).filter((r): r is Row => r !== undefined);
    for (const r of at) {
      out.push(`${label.padEnd(32)} ${String(r.files).padStart(6)}  ${r.maxPeakMb.toFixed(0).padStart(12)}  ${((r.wallS * 1000) / r.files).toFixed(3).padStart(10)}`);
    }
    const largest = at[at.length - 1];
    const base = at.find((r) => r.files === 2 * Math.ceil(20_000 / 2) || r.files === 20_000);
    const peak = Math.max(...at.map((r) => r.maxPeakMb));
    let verdict = `${label}: peak RSS ${peak.toFixed(0)} MB (target ${SCALE_RSS_MB} MB: ${peak <= SCALE_RSS_MB ? 'met' : 'NOT met'})`;
    if (largest && base && largest !== base) {
      const ratio = largest.wallS / largest.files / (base.wallS / base.files);
      verdict += `; time a file at ${largest.files} is ${ratio.toFixed(2)} x its value at ${base.files} (target ${SCALE_TIME_RATIO}: ${ratio <= SCALE_TIME_RATIO ? 'met' : 'NOT met'})`;
    }
    if (at.length) out.push(verdict);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const ours = cliArg === undefined ? ensureBuilt(build) : `node ${cliArg} (--cli)`;
  const peers = withPeers ? ['aria2c', 'curl'].filter(have) : [];
  const missing = withPeers ? ['aria2c', 'curl'].filter((p) => !peers.includes(p)) : [];
  console.log(`export benchmark: sets ${setNames.join(', ')}; storage latency ${latencies.join(', ')} ms; ${runs} runs each, medians`);
  console.log(`ours: ${ours}; default concurrency ${PHOTO_EXPORT_CONCURRENCY} for photos, ${DEFAULT_EXPORT_CONCURRENCY} for attachments${sweep ? `; sweep over ${sweepConcurrency.join('/')}` : ''}`);
  if (missing.length) console.log(`not installed, skipped: ${missing.join(', ')} (apt-get install aria2 curl)`);
  const samples: Sample[] = [];
  const emulators: EmulatorFigures[] = [];
  const base = await mkdtemp(join(tmpdir(), 'wds-bench-'));
  try {
    for (const name of setNames) {
      const set = SETS[name]!;
      const emulator = await startEmulatorChild(set);
      try {
        for (const latency of latencies) {
          await setLatency(emulator, latency);
          const ourConcurrency = sweep ? sweepConcurrency : [...new Set([defaultConcurrency(set.what), ...(set.peers && peers.length ? [PEER_CONCURRENCY] : [])])];
          const tools: { tool: string; go: (work: string) => Promise<Omit<Sample, 'set' | 'latency' | 'tool'>> }[] = [];
          for (const c of ourConcurrency) tools.push({ tool: 'ours', go: (w) => runOurs(emulator, set, w, c, 'folder') });
          // As the company grows, the zip is measured on attachments (a photo export to a zip is the same run).
          if (withZip && !(SIZES && set.what === 'photos')) tools.push({ tool: 'ours (zip)', go: (w) => runOurs(emulator, set, w, defaultConcurrency(set.what), 'zip') });
          if (rerun && set.what === 'attachments') {
            tools.push({ tool: 'ours (folder rerun)', go: (w) => runOursAgain(emulator, set, w, 'folder') });
            if (withZip) tools.push({ tool: 'ours (zip rerun)', go: (w) => runOursAgain(emulator, set, w, 'zip') });
          }
          if (set.peers && peers.includes('aria2c')) tools.push({ tool: 'aria2c', go: (w) => runAria2(emulator, set, w) });
          if (set.peers && peers.includes('curl')) tools.push({ tool: 'curl', go: (w) => runCurl(emulator, set, w) });
          // A first, untimed export warms the emulator up (its JIT, its sockets' buffers): a cold
          // emulator answers slower and in smaller pieces, which costs the reader more CPU.
          for (let w = 0; w < warmups; w += 1) {
            const work = join(base, `${set.name}-${latency}-warmup-${w}`);
            await mkdir(work, { recursive: true });
            await runOurs(emulator, set, work, defaultConcurrency(set.what), 'folder');
            await releaseData(work);
          }
          // Runs interleave the tools, so that load from elsewhere on the machine falls on all of them.
          for (let r = 0; r < runs; r += 1) {
            for (const { tool, go } of tools) {
              const work = join(base, `${set.name}-${latency}-${r}-${samples.length}`);
              await mkdir(work, { recursive: true });
              const sample = { set: set.name, latency, tool, ...(await go(work)) };
              samples.push(sample);
              process.stderr.write(`  ${set.name} ${latency} ms run ${r + 1}: ${tool} c${sample.concurrency} ${(sample.ms / 1000).toFixed(2)} s, max RSS ${(sample.peakKb / 1024).toFixed(0)} MB, CPU ${sample.cpuS.toFixed(2)} s\n`);
              await releaseData(work);
            }
          }
        }
      } finally {
        emulators.push({ set: set.name, files: set.files, startMs: emulator.startMs, peakKb: await peakRssKb(emulator.child.pid) });
        await stopEmulatorChild(emulator);
      }
    }
  } finally {
    await removeTree(base);
  }
  const rows = summarise(samples);
  console.log('');
  console.log(table(rows));
  console.log('');
  for (const line of ratios(rows)) console.log(line);
  if (SIZES) {
    console.log('');
    for (const line of scaling(rows, SIZES)) console.log(line);
    console.log('');
    console.log('emulator (its own process)        files   start s   peak RSS MB');
    for (const e of emulators) console.log(`${e.set.padEnd(32)} ${String(e.files).padStart(6)}  ${(e.startMs / 1000).toFixed(2).padStart(8)}  ${(e.peakKb / 1024).toFixed(0).padStart(12)}`);
    console.log(`uptime: ${spawnSync('uptime', { encoding: 'utf8' }).stdout.trim()}`);
    return;
  }
  for (const line of bounds(rows)) console.log(line);
}

await main();
