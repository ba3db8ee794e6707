/**
 * Export benchmark (issue 4): our export against `aria2c -j16` and `curl -Z --parallel-max 16`
 * over the same freshly listed URLs, on generated companies served by an emulator in a process of
 * its own (its CPU and memory are not ours), with storage latency 0 and 20 ms.
 *
 *   npx tsx bench/export.ts                      every set, 3 runs each, medians
 *   npx tsx bench/export.ts --sets photos --latencies 20 --runs 5
 *   npx tsx bench/export.ts --sweep              our export at concurrency 8/16/32/64, 20 ms latency
 *   npx tsx bench/export.ts --no-peers --no-zip
 *   npx tsx bench/export.ts --warmup 0           no untimed export before each set and latency
 *
 * Sets: `photos` (2,000 photos of 100 KB), `attachments` (200 PDFs of 5 MB), `large` (20,000
 * photos of 20 KB, ours only: peak memory). Our export runs in a child process built with esbuild
 * and split at dynamic imports, as the published CLI runs (compiled, a module loaded when first
 * needed, no TypeScript loader); its wall time
 * includes its own listing, the peers' does not (they get URLs listed just before they start).
 * Peak RSS is VmHWM of the process (ours) or `/usr/bin/time`'s maximum resident set (peers).
 * Wall times are medians, with the fastest and slowest run beside them: on this shared 2-core
 * machine the same export varies by a third from run to run, mostly in the kernel's cost of
 * writing to the page cache (the system time of our file-writing threads went from 0.4 to 1.7 s
 * for the same gigabyte), which falls on the peers as well.
 *
 * Between runs the files a run wrote are emptied, not deleted; all of them go at the end. ext4
 * skips inodes deleted in the last minute when it picks one for a new file, reading the inode
 * table for each: deleting a run's 200 to 20,000 files made the next run's file creation scan
 * past them (our export of the 5 MB set, four runs in a row each way, medians of two blocks each:
 * 1.75 and 1.78 s after deletions, 1.57 and 1.65 s without; the peers' runs paid it too). A
 * user's export does not follow thousands of deletions.
 * Install the peers with `apt-get install aria2 curl`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { WdsClient } from '../src/client/client.js';
import { UrlLister, attachmentTargets, type ListTarget } from '../src/stages/list-urls.js';
import { DEFAULT_EXPORT_CONCURRENCY, PHOTO_EXPORT_CONCURRENCY, defaultConcurrency } from '../src/pipelines/export.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const PEER_CONCURRENCY = 16;

interface BenchSet {
  name: string;
  what: 'photos' | 'attachments';
  files: number;
  bytes: number;
  generate: Record<string, unknown>;
  peers: boolean;
}

const SETS: Record<string, BenchSet> = {
  photos: {
    name: 'photos', what: 'photos', files: 2000, bytes: 2000 * 100_000, peers: true,
    generate: { members: 2000, photo_bytes: [100_000, 100_000], photo_ratio: 1, attachments_per_member: [0, 0] },
  },
  attachments: {
    name: 'attachments', what: 'attachments', files: 200, bytes: 200 * 5_000_000, peers: true,
    generate: { members: 200, photo_ratio: 0, attachments_per_member: [1, 1], attachment_bytes: [5_000_000, 5_000_000] },
  },
  large: {
    name: 'large', what: 'photos', files: 20_000, bytes: 20_000 * 20_000, peers: false,
    generate: { members: 20_000, photo_bytes: [20_000, 20_000], photo_ratio: 1, attachments_per_member: [0, 0] },
  },
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
const runs = Number(argValue('runs') ?? 3);
const warmups = Number(argValue('warmup') ?? 1);
const setNames = list('sets', sweep ? 'photos,attachments' : 'photos,attachments,large');
const latencies = list('latencies', sweep ? '20' : '0,20').map(Number);
const sweepConcurrency = list('concurrency', '8,16,32,64').map(Number);
const withPeers = !flag('no-peers') && !sweep;
const withZip = !flag('no-zip') && !sweep;
for (const name of setNames) if (!SETS[name]) throw new Error(`unknown set ${name}; sets: ${Object.keys(SETS).join(', ')}`);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a whole number, got ${runs}`);
if (!Number.isInteger(warmups) || warmups < 0) throw new Error(`--warmup must be a whole number, got ${warmups}`);

// ---------------------------------------------------------------------------------------------
// Processes

/** Our export, compiled into one ESM file next to node_modules (so its packages resolve). */
async function buildChild(): Promise<{ command: string; args: string[]; note: string }> {
  const outdir = join(ROOT, 'node_modules', '.cache', 'wds-bench');
  try {
    const esbuild = await import('esbuild');
    // Split at dynamic imports, as tsc's one file per module is: archiver loads only for a zip.
    await esbuild.build({
      entryPoints: [join(HERE, 'export-child.ts')], bundle: true, splitting: true, platform: 'node', format: 'esm', target: 'node20',
      packages: 'external', outdir, outExtension: { '.js': '.mjs' }, logLevel: 'warning',
    });
    return { command: process.execPath, args: [join(outdir, 'export-child.mjs')], note: 'compiled with esbuild' };
  } catch (error) {
    // Without esbuild the child runs through tsx, whose loader thread adds about 30 MB.
    return { command: process.execPath, args: ['--import', 'tsx', join(HERE, 'export-child.ts')], note: `run through tsx (esbuild: ${(error as Error).message})` };
  }
}

interface Emulator {
  baseUrl: string;
  consumerKey: string;
  consumerSecret: string;
  child: ChildProcess;
}

async function startEmulatorChild(set: BenchSet): Promise<Emulator> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(HERE, 'emulator-child.ts'), JSON.stringify(set.generate)], {
    cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the emulator exited with ${code} before it listened`)));
  });
  const info = JSON.parse(first) as { base_url: string; consumer_key: string; consumer_secret: string };
  return { baseUrl: info.base_url, consumerKey: info.consumer_key, consumerSecret: info.consumer_secret, child };
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

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function run(command: string, args: string[], cwd = ROOT): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr, ms: performance.now() - started }));
  });
}

const haveTime = existsSync('/usr/bin/time');
const have = (tool: string): boolean => spawnSync(tool, ['--version'], { stdio: 'ignore' }).status === 0;

/** Runs a peer under `/usr/bin/time`, answering its wall time and peak RSS (kB). */
async function runMeasured(command: string, args: string[], cwd: string): Promise<{ ms: number; peakKb: number | null; exit: Exit }> {
  if (!haveTime) {
    const exit = await run(command, args, cwd);
    return { ms: exit.ms, peakKb: null, exit };
  }
  const timeFile = join(cwd, '..', `time-${process.pid}.txt`);
  const exit = await run('/usr/bin/time', ['-f', '%M', '-o', timeFile, command, ...args], cwd);
  const peakKb = Number(readFileSync(timeFile, 'utf8').trim().split('\n').pop());
  await rm(timeFile, { force: true });
  return { ms: exit.ms, peakKb: Number.isFinite(peakKb) ? peakKb : null, exit };
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
  peakKb: number | null;
  /** Ours only: what the largest sampled RSS was made of. */
  atPeak?: Record<string, number>;
  /** Ours only: CPU seconds, in all and by thread. */
  cpu?: Record<string, number>;
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

function check(set: BenchSet, tool: string, got: { files: number; bytes: number }): void {
  if (got.files !== set.files || got.bytes !== set.bytes) {
    throw new Error(`${tool} on ${set.name}: expected ${set.files} files of ${set.bytes} bytes, got ${got.files} files of ${got.bytes} bytes`);
  }
}

async function runOurs(child: { command: string; args: string[] }, emulator: Emulator, set: BenchSet, work: string, concurrency: number, sink: 'folder' | 'zip'): Promise<Omit<Sample, 'set' | 'latency' | 'tool'>> {
  const out = join(work, sink === 'zip' ? 'out.zip' : 'out');
  const options = { base_url: emulator.baseUrl, consumer_key: emulator.consumerKey, consumer_secret: emulator.consumerSecret, what: set.what, out, concurrency };
  const exit = await run(child.command, [...child.args, JSON.stringify(options)]);
  if (exit.code !== 0) throw new Error(`our export failed (${exit.code}):\n${exit.stderr}`);
  const result = JSON.parse(exit.stdout.trim().split('\n').pop()!) as { ms: number; files: number; failed: number; bytes: number; peak_rss_kb: number | null; at_peak_mb: Record<string, number>; cpu_s: Record<string, number> };
  check(set, `ours (${sink})`, result);
  if (sink === 'folder') check(set, 'ours (folder on disk)', await folderTotals(out));
  else if ((await stat(out)).size < set.bytes) throw new Error(`the zip is smaller than its files: ${(await stat(out)).size}`);
  return { concurrency, files: result.files, bytes: result.bytes, ms: result.ms, peakKb: result.peak_rss_kb, atPeak: result.at_peak_mb, cpu: result.cpu_s };
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
  const { ms, peakKb, exit } = await runMeasured('aria2c', [
    `-j${PEER_CONCURRENCY}`, '-i', input, '-d', out, '--file-allocation=none', '--allow-overwrite=true', '--auto-file-renaming=false',
    '--console-log-level=warn', '--summary-interval=0', '--download-result=hide', '--quiet=true',
  ], work);
  if (exit.code !== 0) throw new Error(`aria2c exited with ${exit.code}:\n${exit.stdout}${exit.stderr}`);
  const got = await folderTotals(out);
  check(set, 'aria2c', got);
  return { concurrency: PEER_CONCURRENCY, ...got, ms, peakKb };
}

async function runCurl(emulator: Emulator, set: BenchSet, work: string): Promise<Omit<Sample, 'set' | 'latency' | 'tool'>> {
  const files = await listFresh(emulator, set);
  const out = join(work, 'out');
  await mkdir(out, { recursive: true });
  const config = join(work, 'curl.cfg');
  await writeFile(config, files.map((f) => `url = "${f.url}"\noutput = "${join(out, f.name)}"\n`).join(''));
  const { ms, peakKb, exit } = await runMeasured('curl', ['-Z', '--parallel-max', String(PEER_CONCURRENCY), '-s', '-S', '--fail', '-K', config], work);
  if (exit.code !== 0) throw new Error(`curl exited with ${exit.code}:\n${exit.stderr}`);
  const got = await folderTotals(out);
  check(set, 'curl', got);
  return { concurrency: PEER_CONCURRENCY, ...got, ms, peakKb };
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
  peakMb: number | null;
  maxPeakMb: number | null;
  /** Ours only: CPU seconds of the process, user and system, median. */
  cpuS: number | null;
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
    const peaks = g.map((s) => s.peakKb).filter((p): p is number => p !== null);
    const cpus = g.map((s) => (s.cpu ? s.cpu.user! + s.cpu.system! : null)).filter((c): c is number => c !== null);
    return {
      set: first.set, latency: first.latency, tool: first.tool, concurrency: first.concurrency, files: first.files,
      mb: first.bytes / 1e6, wallS, minWallS: Math.min(...g.map((s) => s.ms)) / 1000, maxWallS: Math.max(...g.map((s) => s.ms)) / 1000, mbPerS: first.bytes / 1e6 / wallS,
      peakMb: peaks.length ? median(peaks) / 1024 : null, maxPeakMb: peaks.length ? Math.max(...peaks) / 1024 : null,
      cpuS: cpus.length ? median(cpus) : null, runs: g.length,
    };
  });
}

function table(rows: Row[]): string {
  const header = ['set', 'latency', 'tool', 'conc', 'files', 'MB', 'wall s', 'min-max s', 'MB/s', 'peak RSS MB', 'max RSS MB', 'CPU s', 'runs'];
  const body = rows.map((r) => [
    r.set, `${r.latency} ms`, r.tool, String(r.concurrency), String(r.files), r.mb.toFixed(0), r.wallS.toFixed(2), `${r.minWallS.toFixed(2)}-${r.maxWallS.toFixed(2)}`, r.mbPerS.toFixed(0),
    r.peakMb === null ? '-' : r.peakMb.toFixed(0), r.maxPeakMb === null ? '-' : r.maxPeakMb.toFixed(0), r.cpuS === null ? '-' : r.cpuS.toFixed(2), String(r.runs),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i >= 3 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
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

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const child = await buildChild();
  const peers = withPeers ? ['aria2c', 'curl'].filter(have) : [];
  const missing = withPeers ? ['aria2c', 'curl'].filter((p) => !peers.includes(p)) : [];
  console.log(`export benchmark: sets ${setNames.join(', ')}; storage latency ${latencies.join(', ')} ms; ${runs} runs each, medians`);
  console.log(`ours: ${child.note}; default concurrency ${PHOTO_EXPORT_CONCURRENCY} for photos, ${DEFAULT_EXPORT_CONCURRENCY} for attachments${sweep ? `; sweep over ${sweepConcurrency.join('/')}` : ''}`);
  if (missing.length) console.log(`not installed, skipped: ${missing.join(', ')} (apt-get install aria2 curl)`);
  const samples: Sample[] = [];
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
          for (const c of ourConcurrency) tools.push({ tool: 'ours', go: (w) => runOurs(child, emulator, set, w, c, 'folder') });
          if (withZip) tools.push({ tool: 'ours (zip)', go: (w) => runOurs(child, emulator, set, w, defaultConcurrency(set.what), 'zip') });
          if (set.peers && peers.includes('aria2c')) tools.push({ tool: 'aria2c', go: (w) => runAria2(emulator, set, w) });
          if (set.peers && peers.includes('curl')) tools.push({ tool: 'curl', go: (w) => runCurl(emulator, set, w) });
          // A first, untimed export warms the emulator up (its JIT, its sockets' buffers): a cold
          // emulator answers slower and in smaller pieces, which costs the reader more CPU.
          for (let w = 0; w < warmups; w += 1) {
            const work = join(base, `${set.name}-${latency}-warmup-${w}`);
            await mkdir(work, { recursive: true });
            await runOurs(child, emulator, set, work, defaultConcurrency(set.what), 'folder');
            await releaseData(work);
          }
          // Runs interleave the tools, so that load from elsewhere on the machine falls on all of them.
          for (let r = 0; r < runs; r += 1) {
            for (const { tool, go } of tools) {
              const work = join(base, `${set.name}-${latency}-${r}-${samples.length}`);
              await mkdir(work, { recursive: true });
              const sample = { set: set.name, latency, tool, ...(await go(work)) };
              samples.push(sample);
              process.stderr.write(`  ${set.name} ${latency} ms run ${r + 1}: ${tool} c${sample.concurrency} ${(sample.ms / 1000).toFixed(2)} s, peak ${sample.peakKb === null ? '-' : (sample.peakKb / 1024).toFixed(0)} MB${sample.atPeak ? ` (at the sampled peak, MB: ${Object.entries(sample.atPeak).map(([k, v]) => `${k} ${v}`).join(', ')})` : ''}${sample.cpu ? `\n    CPU s: ${Object.entries(sample.cpu).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}` : ''}\n`);
              await releaseData(work);
            }
          }
        }
      } finally {
        await stopEmulatorChild(emulator);
      }
    }
  } finally {
    await rm(base, { recursive: true, force: true });
  }
  const rows = summarise(samples);
  console.log('');
  console.log(table(rows));
  console.log('');
  for (const line of ratios(rows)) console.log(line);
}

await main();
