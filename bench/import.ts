/**
 * Import benchmark, in two halves, each against an emulator in a process of its own at clock speed
 * 60 (one service minute per second) unless `--speed` says otherwise. The import is the shipped CLI
 * (`node dist/cli/main.js photos import` / `attachments import`, built first with `npm run build`
 * unless --no-build) with WDS_CLIENT_LIMITS scaled to that clock (at 60, 5 updates a second),
 * measured as `/usr/bin/time`
 * measures (bench/max-rss.ts): wall time, maximum resident set and CPU from wait4. The maximum
 * resident set is the importing process's, or its photo checker's when that peaked higher.
 *
 * - Photos: 1,000 real photos made here with sharp (JPEGs of 50 KB to 2 MB sent as they are, and
 *   HEIC, WebP and oversized JPEGs to convert) into a generated company with photos for 90 % of
 *   its members, so both register and update are used.
 * - Attachments: 3,000 real files (PDFs of 10 KB to 1 MB, CSVs, greyscale PNG scans), three for
 *   each member as `<code>/<file>`, into the qualifications file part (sheet 2, field 1306) of a
 *   generated company without files: every file is registered.
 *
 *   npx tsx bench/import.ts                           both halves, trimming off
 *   npx tsx bench/import.ts --photos 300 --trim --keep
 *   npx tsx bench/import.ts --photos 0 --attachments 3000   attachments only (0 skips a half)
 *   npx tsx bench/import.ts --no-build                      use dist/ as it is
 *   npx tsx bench/import.ts --speed 1 --attachments 0       the service's real pace: 1,000 photos
 *                                                           wait a minute on the update limit
 *   npx tsx bench/import.ts --files 2000,20000             memory and time per file at each size
 *   npx tsx bench/import.ts --runs 3 --cli /tmp/x/dist/cli/main.js   the photo import 3 times (the
 *                                                           photos made once, a fresh emulator each
 *                                                           time), with that build of the CLI
 *
 * Prints for each half: requests sent per route (the emulator's count) against the minimum
 * (photos: ceil(photos / 100) per route, from the emulator's state before the run; attachments:
 * the fewest that 1,000 files and 250 MB of body allow, from the files' sizes), 429 answers
 * (emulator stats), max RSS, CPU seconds, files per second of validation (and normalisation for
 * photos: the import's check_ms), total time, and the total against the limit-bound minimum: the
 * time the update limit alone imposes on the fewest requests (5 in any minute, as `wds-files plan`
 * counts it: ceil(requests / 5 - 1) minutes, scaled by the clock speed). The target, at speed 1:
 * the whole command within 1.05 x that minimum. The time over it is split into the time before the
 * first update request left, the waits between update requests beyond what the limit imposes, and
 * the time after the last one left: its answer, its task followed to the end, and the rest (the
 * closing listing, the report, the process ending). With --runs, the median of the totals.
 *
 * With --files (issue 46: memory that does not grow with the files), instead of the two halves:
 * at each size, a photo import of that many small JPEGs (one 64x64 picture, a file a member) and
 * an attachment import of that many PDFs of 700 bytes (two a member), each into a generated
 * company without files; prints peak RSS, CPU seconds, wall time and time per file, and the RSS
 * each file added beyond the first size. `--photos 0` or `--attachments 0` leaves a kind out.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { heic } from '../test/import/heic.js';
import { pdf } from '../test/import/attachment-files.js';
import { MAX_ATTACHMENTS_PER_REQUEST, MAX_REQUEST_BYTES, base64Length } from '../src/spec/limits.js';
import { limitSeconds } from '../src/pipeline-files/plan.js';
import { measure } from './max-rss.js';
import { CLI, ensureBuilt } from './shipped-cli.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const PER_REQUEST = 100;
/** The whole import may take this much more than the time the limits alone impose (at speed 1). */
const LIMIT_BOUND_TARGET = 1.05;

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const CLOCK_SPEED = Number(argValue('speed') ?? 60);
if (!(CLOCK_SPEED > 0)) throw new Error(`--speed must be a number above 0 (service seconds per second), got ${argValue('speed')}`);
const UPDATE_WINDOW_MS = 60_000 / CLOCK_SPEED;
const photos = Number(argValue('photos') ?? 1000);
const attachments = Number(argValue('attachments') ?? 3000);
const keep = process.argv.includes('--keep');
const trimming = process.argv.includes('--trim');
const runs = Number(argValue('runs') ?? 1);
const cliPath = argValue('cli');
const fileSizes = argValue('files')?.split(',').map(Number);
if (fileSizes?.some((n) => !Number.isInteger(n) || n < 10)) throw new Error(`--files must be whole numbers of at least 10, separated by commas, got ${argValue('files')}`);
const build = !process.argv.includes('--no-build') && !cliPath;
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a whole number of at least 1, got ${argValue('runs')}`);
if (!Number.isInteger(photos) || (photos !== 0 && photos < 10)) throw new Error(`--photos must be 0 or a whole number of at least 10, got ${argValue('photos')}`);
if (!Number.isInteger(attachments) || attachments < 0) throw new Error(`--attachments must be a whole number, got ${argValue('attachments')}`);

// ---------------------------------------------------------------------------------------------
// The photos

/** Pseudo-random bytes (xorshift32): the same for the same seed. */
function noise(length: number, seed: number): Buffer {
  const out = Buffer.alloc(length);
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < length; i += 1) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/**
 * Pixels that compress like a phone photo (about 0.3 bytes a pixel at JPEG quality 88): smooth
 * blobs from upscaled noise, with fine grain over them.
 */
async function photoPixels(width: number, height: number, seed: number): Promise<Buffer> {
  const sw = Math.max(2, Math.round(width / 24));
  const sh = Math.max(2, Math.round(height / 24));
  const pixels = await sharp(noise(sw * sh * 3, seed), { raw: { width: sw, height: sh, channels: 3 } }).resize(width, height, { kernel: 'cubic' }).raw().toBuffer();
  const grain = noise(pixels.length, seed + 1);
  for (let i = 0; i < pixels.length; i += 1) pixels[i] = Math.max(0, Math.min(255, pixels[i]! + (grain[i]! & 31) - 16));
  return pixels;
}

/** Width and height of a 4:3 photo of about `bytes` as JPEG (0.3 bytes a pixel). */
function sizeFor(bytes: number): [number, number] {
  const pixels = bytes / 0.3;
  const width = Math.round(Math.sqrt((pixels * 4) / 3) / 2) * 2;
  return [width, Math.round((width * 3) / 4 / 2) * 2];
}

/** The JPEG with a comment naming it after SOI: the same picture, other bytes. */
const labelled = (jpeg: Buffer, label: string): Buffer => {
  const text = Buffer.from(label);
  const segment = Buffer.alloc(4 + text.length);
  segment.writeUInt16BE(0xfffe, 0);
  segment.writeUInt16BE(text.length + 2, 2);
  text.copy(segment, 4);
  return Buffer.concat([jpeg.subarray(0, 2), segment, jpeg.subarray(2)]);
};

interface Made {
  kinds: Record<string, number>;
  bytes: number;
}

/**
 * `count` photos named G000001.jpg ... (the generated company's codes): 4 % HEIC, 4 % WebP, 2 %
 * JPEGs over 5 MB, the rest JPEGs from 50 KB to 2 MB (log-uniform over 50 different pictures).
 */
async function makePhotos(dir: string, count: number): Promise<Made> {
  const heics = Math.round(count * 0.04);
  const webps = Math.round(count * 0.04);
  const oversize = Math.round(count * 0.02);
  const jpegs = count - heics - webps - oversize;
  const bases: Buffer[] = [];
  for (let i = 0; i < 50; i += 1) {
    const target = 50_000 * (2_000_000 / 50_000) ** (i / 49);
    const [w, h] = sizeFor(target);
    bases.push(await sharp(await photoPixels(w, h, i + 1), { raw: { width: w, height: h, channels: 3 } }).jpeg({ quality: 88 }).toBuffer());
  }
  const big: Buffer[] = [];
  for (let i = 0; i < 4; i += 1) {
    const [w, h] = sizeFor(5_600_000 + i * 800_000);
    big.push(await sharp(await photoPixels(w, h, 100 + i), { raw: { width: w, height: h, channels: 3 } }).jpeg({ quality: 88 }).toBuffer());
  }
  const webpBases: Buffer[] = [];
  const heicBases: Buffer[] = [];
  for (let i = 0; i < 4; i += 1) {
    const [w, h] = sizeFor(300_000 + i * 250_000);
    const pixels = await photoPixels(w, h, 200 + i);
    webpBases.push(await sharp(pixels, { raw: { width: w, height: h, channels: 3 } }).webp({ quality: 85 }).toBuffer());
    // Our HEIC writer stores samples uncompressed (1.5 bytes a pixel): about 1 MP keeps it near a phone's size.
    const hw = 1152 - i * 128;
    const hh = (hw * 3) / 4;
    const small = await sharp(pixels, { raw: { width: w, height: h, channels: 3 } }).resize(hw, hh).raw().toBuffer();
    heicBases.push(heic(hw, hh, (x, y) => {
      const o = (y * hw + x) * 3;
      return [small[o]!, small[o + 1]!, small[o + 2]!];
    }));
  }
  const made: Made = { kinds: { jpeg: jpegs, heic: heics, webp: webps, 'jpeg over 5 MB': oversize }, bytes: 0 };
  const code = (n: number): string => `G${String(n).padStart(6, '0')}`;
  let n = 0;
  const write = async (name: string, data: Buffer): Promise<void> => {
    made.bytes += data.length;
    await writeFile(join(dir, name), data);
  };
  for (let i = 0; i < jpegs; i += 1) {
    n += 1;
    await write(`${code(n)}.jpg`, labelled(bases[(i * 7) % bases.length]!, `bench photo ${n}`));
  }
  // HEIC and WebP carry no comment: each is one of four pictures, which the service does not mind.
  for (let i = 0; i < heics; i += 1) await write(`${code(++n)}.heic`, heicBases[i % 4]!);
  for (let i = 0; i < webps; i += 1) await write(`${code(++n)}.webp`, webpBases[i % 4]!);
  for (let i = 0; i < oversize; i += 1) {
    n += 1;
    await write(`${code(n)}.jpg`, labelled(big[i % 4]!, `bench photo ${n}`));
  }
  return made;
}

// ---------------------------------------------------------------------------------------------
// The attachments

interface MadeAttachments {
  kinds: Record<string, number>;
  bytes: number;
  /** Per file: the member, the name and the size, in the order the folder source gives them. */
  files: { code: string; name: string; size: number }[];
}

/**
 * `count` files, three per member (G000001/, G000002/, ...): 75 % PDFs of 10 KB to 1 MB
 * (log-uniform, random content, so nothing compresses), 20 % CSVs of 3 to 90 KB, 5 % PNG scans.
 */
async function makeAttachments(dir: string, count: number): Promise<MadeAttachments> {
  const random = noise(count * 4, 7);
  const fraction = (i: number): number => random.readUInt32LE(i * 4) / 2 ** 32;
  const scans: Buffer[] = [];
  // Greyscale pages of A4 proportions, 300 to 600 KB as PNG.
  for (let i = 0; i < 4; i += 1) {
    const w = 560 + i * 80;
    const h = Math.round(w * 1.414);
    scans.push(await sharp(await photoPixels(w, h, 300 + i), { raw: { width: w, height: h, channels: 3 } }).greyscale().png({ compressionLevel: 6 }).toBuffer());
  }
  const made: MadeAttachments = { kinds: { pdf: 0, csv: 0, png: 0 }, bytes: 0, files: [] };
  const code = (n: number): string => `G${String(n).padStart(6, '0')}`;
  for (let i = 0; i < count; i += 1) {
    const member = code(Math.floor(i / 3) + 1);
    const kind = i % 20 === 19 ? 'png' : i % 5 === 4 ? 'csv' : 'pdf';
    let data: Buffer;
    if (kind === 'pdf') data = pdf(Math.round(10_000 * 100 ** fraction(i)));
    else if (kind === 'csv') {
      const rows = Math.round(100 + fraction(i) * 2900);
      data = Buffer.from(`date,subject,score\n${Array.from({ length: rows }, (_, r) => `2025-${String((r % 12) + 1).padStart(2, '0')}-01,subject ${r % 37},${(r * 7919) % 100}`).join('\n')}\n`);
    } else data = scans[i % 4]!;
    const name = `${kind === 'png' ? 'scan' : kind === 'csv' ? 'scores' : 'certificate'}-${(i % 3) + 1}.${kind}`;
    await mkdir(join(dir, member), { recursive: true });
    await writeFile(join(dir, member, name), data);
    made.kinds[kind]! += 1;
    made.bytes += data.length;
    made.files.push({ code: member, name, size: data.length });
  }
  return made;
}

/**
 * The fewest requests 1,000 files and 250 MB of body allow (api-v2.md 4.4 Sheets 9, 8), each file
 * in a member element of the wire format with its content as base64.
 */
function attachmentMinimum(files: MadeAttachments['files']): number {
  const envelope = Buffer.byteLength('{"member_data":[]}');
  const body = files.reduce((n, f) => n + 1 + Buffer.byteLength(JSON.stringify({ code: f.code, records: [{ file_name: f.name, base64_content: '' }] })) + base64Length(f.size), 0);
  return Math.max(Math.ceil(files.length / MAX_ATTACHMENTS_PER_REQUEST), Math.ceil(body / (MAX_REQUEST_BYTES - envelope)));
}

// ---------------------------------------------------------------------------------------------
// Processes

interface Emulator {
  baseUrl: string;
  consumerKey: string;
  consumerSecret: string;
  child: ChildProcess;
}

async function startEmulator(members: number, files = true): Promise<Emulator> {
  const args = [
    '--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'emulator', '--port', '0', '--json', '--generate', String(members),
    ...(files ? [] : ['--no-files']),
    '--clock-speed', String(CLOCK_SPEED), '--clock-start', '2026-04-01 10:00:00', '--no-maintenance',
  ];
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the emulator exited with ${code} before it listened`)));
  });
  const info = JSON.parse(first) as { base_url: string; companies: { consumer_key: string; consumer_secret: string }[] };
  return { baseUrl: info.base_url, consumerKey: info.companies[0]!.consumer_key, consumerSecret: info.companies[0]!.consumer_secret, child };
}

async function stopEmulator(emulator: Emulator): Promise<void> {
  if (emulator.child.exitCode !== null) return;
  const exited = new Promise((resolve) => emulator.child.once('exit', resolve));
  emulator.child.kill('SIGTERM');
  await exited;
}

async function control<T>(emulator: Emulator, path: string): Promise<T> {
  const res = await fetch(`${emulator.baseUrl}/_emulator${path}`);
  if (!res.ok) throw new Error(`${path} answered ${res.status}`);
  return (await res.json()) as T;
}

// ---------------------------------------------------------------------------------------------
// The run

/** The CLI's --json summary of an import. */
interface Summary {
  counts: Record<string, number>;
  requests: { register: number; update: number; minimum: number; resubmitted: number };
  check_ms: number;
  waited_ms: number;
}

interface ImportRun {
  summary: Summary;
  ms: number;
  maxRssKb: number;
  cpuS: number;
  /** The first items that did not go in, from the --report file. */
  problems: unknown[];
  /** When each update request was sent and answered, in seconds from the command's start (from its --log-file). */
  updates: { sent: number; answered: number }[];
  /** When the last task poll and the last request of any kind were answered, in seconds from the start. */
  lastTaskPoll: number | null;
  lastRequest: number | null;
  /** The requests answered before the first update request left: what the run waited on before it. */
  before: { what: string; answered: number; ms: number }[];
}

/**
 * The update requests in the CLI's log file: each request line is written when the answer came,
 * with the time it took, so the request went out that many ms before.
 */
async function requestTimes(logFile: string, startedAt: number): Promise<Pick<ImportRun, 'updates' | 'lastTaskPoll' | 'lastRequest' | 'before'>> {
  const text = await readFile(logFile, 'utf8').catch(() => '');
  const updates: ImportRun['updates'] = [];
  let lastTaskPoll: number | null = null;
  let lastRequest: number | null = null;
  const requests: ImportRun['before'] = [];
  for (const raw of text.split('\n')) {
    if (!raw) continue;
    const { time, msg } = JSON.parse(raw) as { time: string; msg: string };
    if (!/^(?:GET|POST|PATCH|PUT|DELETE) \S+ \d+ \d+ ms/.test(msg)) continue;
    const answered = (Date.parse(time) - startedAt) / 1000;
    lastRequest = answered;
    const [method, path, , ms] = msg.split(' ');
    requests.push({ what: `${method} ${path!.replace(/^https?:\/\/[^/]+/, '').replace(/\?.*$/, '')}`, answered, ms: Number(ms) });
    if (/^GET \S+\/tasks\/\d+ /.test(msg)) lastTaskPoll = answered;
    const m = /^(?:POST|PATCH) \S+\/(?:face_image|file) \d+ (\d+) ms/.exec(msg);
    if (m) updates.push({ sent: answered - Number(m[1]) / 1000, answered });
  }
  const firstSent = updates[0]?.sent ?? Infinity;
  return { updates, lastTaskPoll, lastRequest, before: requests.filter((r) => r.answered < firstSent) };
}

interface Stats {
  requests: Record<string, number>;
  update_requests: number;
  rate_limited: number;
}

/** Allocator settings the CLI inherits from this process (the photo checker sets its own unless some are given: photo-checker.ts). */
const MALLOC_ENV = Object.entries(process.env)
  .filter(([k]) => k.startsWith('MALLOC_') || k === 'GLIBC_TUNABLES' || k === 'LD_PRELOAD')
  .map(([k, v]) => `${k}=${v}`).join(' ') || 'glibc defaults';

const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;
const outcomes = (counts: Record<string, number>): string => Object.entries(counts).filter(([, v]) => v).map(([k, v]) => `${v} ${k}`).join(', ');

/** One import by the CLI against `emulator` (`args` after `node dist/cli/main.js`), with the emulator's stats of it. */
async function importRun(emulator: Emulator, args: string[], work: string): Promise<{ run: ImportRun; stats: Stats }> {
  await fetch(`${emulator.baseUrl}/_emulator/stats/reset`, { method: 'POST' });
  const report = join(work, 'report.json');
  const state = await mkdtemp(join(work, 'run-'));
  const env = {
    ...process.env,
    WDS_BASE_URL: emulator.baseUrl, WDS_CONSUMER_KEY: emulator.consumerKey, WDS_CONSUMER_SECRET: emulator.consumerSecret,
    // The service's windows at the emulator's clock speed.
    WDS_CLIENT_LIMITS: `update=5/${UPDATE_WINDOW_MS}ms,request=3000/${3_600_000 / CLOCK_SPEED}ms,token=1000/${3_600_000 / CLOCK_SPEED}ms`,
    // Each run is against a fresh emulator, so it starts with no journal and no shared limit
    // window of its own: the windows a previous run filled would hold its first requests back.
    XDG_CACHE_HOME: join(state, 'cache'), XDG_STATE_HOME: join(state, 'state'),
  };
  // pino appends: each run reads its own lines only.
  const logFile = join(work, 'cli.log');
  await rm(logFile, { force: true });
  const startedAt = Date.now();
  const exit = await measure(process.execPath, [cliPath ?? CLI, ...args, '--json', '--report', report, '--log-file', logFile], { cwd: work, env });
  // 3: finished with some files not taken, which the output shows.
  if (exit.code !== 0 && exit.code !== 3) throw new Error(`the import exited with ${exit.signal ? `signal ${exit.signal}` : exit.code}:\n${exit.stderr}`);
  const summary = JSON.parse(exit.stdout.trim().split('\n').pop()!) as Summary;
  const items = (JSON.parse(await readFile(report, 'utf8')) as { items: { outcome: string }[] }).items;
  const problems = items.filter((i) => i.outcome !== 'ok' && i.outcome !== 'converted').slice(0, 5);
  const times = await requestTimes(logFile, startedAt);
  return { run: { summary, ms: exit.ms, maxRssKb: exit.maxRssKb, cpuS: exit.userS + exit.systemS, problems, ...times }, stats: await control<Stats>(emulator, '/stats') };
}

/**
 * The whole command against the time the update limit alone imposes on `requests` update requests
 * at this clock speed; the target line is printed at speed 1, where the limit is the service's.
 */
function limitBound(run: ImportRun, requests: number): string[] {
  const minimumS = limitSeconds(requests, 0) / CLOCK_SPEED;
  const lines = [
    `  update requests:     sent at ${run.updates.map((u) => `${u.sent.toFixed(1)}`).join(', ')} s; the last answered at ${run.updates.at(-1)?.answered.toFixed(1) ?? '-'} s (from the start)`,
    `  limit-bound minimum: ${minimumS.toFixed(1)} s (${requests} update requests, 5 in any minute of service time, clock speed ${CLOCK_SPEED})`,
    ...breakdown(run, minimumS),
  ];
  if (minimumS === 0) return lines;
  const ratio = run.ms / 1000 / minimumS;
  lines.push(`  against it:          ${ratio.toFixed(3)} x${CLOCK_SPEED === 1 ? ` (target <= ${LIMIT_BOUND_TARGET}: ${ratio <= LIMIT_BOUND_TARGET ? 'met' : 'MISSED'})` : ' (the target is for --speed 1)'}`);
  return lines;
}

/**
 * Where the whole command's time goes around the limit-bound minimum: before the first update
 * request left, the spans between update requests beyond the minimum (the limit's own waits are
 * the minimum), and after the last one left. The times are from before the measuring wrapper
 * started the command (its own start-up, a few hundred ms on a loaded machine, is in them and not
 * in the total), so the last part can come out short or below zero.
 */
function breakdown(run: ImportRun, minimumS: number): string[] {
  const first = run.updates[0];
  const last = run.updates.at(-1);
  if (!first || !last) return [];
  const totalS = run.ms / 1000;
  const between = last.sent - first.sent;
  const answered = last.answered;
  const taskEnd = run.lastTaskPoll !== null && run.lastTaskPoll >= answered ? run.lastTaskPoll : answered;
  return [
    `  breakdown:           ${first.sent.toFixed(1)} s before the first update request; ${between.toFixed(1)} s from the first to the last ` +
      `(${(between - minimumS).toFixed(1)} s over the limit's ${minimumS.toFixed(1)} s); ${(totalS - last.sent).toFixed(1)} s after the last left: ` +
      `${(answered - last.sent).toFixed(1)} s to its answer, ${(taskEnd - answered).toFixed(1)} s to its task's end, ${(totalS - taskEnd).toFixed(1)} s to the end ` +
      `(last request answered at ${run.lastRequest?.toFixed(1) ?? '-'} s)`,
    `  before the first:    ${run.before.map((r) => `${r.what} answered at ${r.answered.toFixed(2)} s (${r.ms} ms)`).join('; ') || 'no request'}`,
  ];
}

const loads = (): string => loadavg().map((l) => l.toFixed(2)).join(', ');

const memory = (run: ImportRun): string => `${(run.maxRssKb / 1024).toFixed(0)} MB (wait4; the importing process or its photo checker, whichever peaked higher)`;

async function photoHalf(cli: string): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'wds-bench-import-'));
  const work = await mkdtemp(join(tmpdir(), 'wds-bench-run-'));
  let emulator: Emulator | undefined;
  try {
    process.stderr.write(`making ${photos} photos in ${dir} ...\n`);
    const madeStarted = performance.now();
    const made = await makePhotos(dir, photos);
    process.stderr.write(`made in ${((performance.now() - madeStarted) / 1000).toFixed(1)} s; starting the emulator and the import ...\n`);
    const results: { totalS: number; minimumS: number }[] = [];
    for (let round = 1; round <= runs; round += 1) {
      if (runs > 1) console.log(`run ${round} of ${runs} (load average ${loads()})`);
      emulator = await startEmulator(photos);
      results.push(await photoRun(cli, emulator, dir, made, work));
      await stopEmulator(emulator);
      emulator = undefined;
    }
    if (runs > 1) {
      const totals = results.map((r) => r.totalS);
      const median = [...totals].sort((a, b) => a - b)[Math.floor(totals.length / 2)]!;
      const minimumS = results[0]!.minimumS;
      const ratio = minimumS ? ` = ${(median / minimumS).toFixed(3)} x the ${minimumS.toFixed(1)} s minimum` : '';
      console.log(`photo import, ${runs} runs: ${totals.map((t) => `${t.toFixed(1)} s`).join(', ')}; median ${median.toFixed(1)} s${ratio} (load average now ${loads()})`);
    }
  } finally {
    if (emulator) await stopEmulator(emulator);
    if (!keep) await rm(dir, { recursive: true, force: true });
    await rm(work, { recursive: true, force: true });
  }
}

/** One photo import against a fresh emulator; answers its total and the limit-bound minimum, in seconds. */
async function photoRun(cli: string, emulator: Emulator, dir: string, made: Made, work: string): Promise<{ totalS: number; minimumS: number }> {
  // The minimum, from the emulator's own state: members with a photo take update, the rest register.
  const before = await control<{ members: { code: string; photo: unknown }[] }>(emulator, '/state');
  const withPhoto = before.members.filter((m) => m.photo).length;
  const minimum = { register: Math.ceil((photos - withPhoto) / PER_REQUEST), update: Math.ceil(withPhoto / PER_REQUEST) };
  const { run, stats } = await importRun(emulator, ['photos', 'import', dir, ...(trimming ? [] : ['--no-trim'])], work);
  const result = run.summary;
  const sent = { register: stats.requests['POST /members/face_image'] ?? 0, update: stats.requests['PATCH /members/face_image'] ?? 0 };

  const lines = [
    `photo import: ${photos} photos (${Object.entries(made.kinds).map(([k, v]) => `${v} ${k}`).join(', ')}; ${mb(made.bytes)}), trimming ${trimming ? 'on' : 'off'}`,
    `  emulator: generated company of ${photos} members, ${withPhoto} with a photo; clock speed ${CLOCK_SPEED}; client update window ${UPDATE_WINDOW_MS} ms (5 a window)`,
    `  import: ${cli}; malloc: ${MALLOC_ENV}`,
    `  outcomes:            ${outcomes(result.counts)}`,
    `  requests sent:       ${sent.register} register + ${sent.update} update = ${sent.register + sent.update} (emulator count)`,
    `  minimum possible:    ${minimum.register} register + ${minimum.update} update = ${minimum.register + minimum.update} (ceil(photos/100) per route; the import's own figure: ${result.requests.minimum})`,
    `  resubmitted files:   ${result.requests.resubmitted}`,
    `  429 answers:         ${stats.rate_limited} (emulator)`,
    `  waited on limits:    ${(result.waited_ms / 1000).toFixed(1)} s`,
    `  max RSS:             ${memory(run)}`,
    `  CPU:                 ${run.cpuS.toFixed(1)} s`,
    `  check and convert:   ${(result.check_ms / 1000).toFixed(1)} s, ${((photos * 1000) / result.check_ms).toFixed(0)} files/s`,
    `  total time:          ${(run.ms / 1000).toFixed(1)} s (the whole command)`,
    ...limitBound(run, minimum.register + minimum.update),
  ];
  console.log(lines.join('\n'));
  if (run.problems.length) console.log(`  problems (first 5): ${JSON.stringify(run.problems)}`);
  return { totalS: run.ms / 1000, minimumS: limitSeconds(minimum.register + minimum.update, 0) / CLOCK_SPEED };
}

async function attachmentHalf(cli: string): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'wds-bench-attachments-'));
  const work = await mkdtemp(join(tmpdir(), 'wds-bench-run-'));
  let emulator: Emulator | undefined;
  try {
    process.stderr.write(`making ${attachments} attachments in ${dir} ...\n`);
    const madeStarted = performance.now();
    const made = await makeAttachments(dir, attachments);
    process.stderr.write(`made in ${((performance.now() - madeStarted) / 1000).toFixed(1)} s; starting the emulator and the import ...\n`);
    const members = Math.ceil(attachments / 3);
    emulator = await startEmulator(members, false);
    const minimum = attachmentMinimum(made.files);
    const { run, stats } = await importRun(emulator, ['attachments', 'import', dir, '--sheet', '2', '--field', '1306'], work);
    const result = run.summary;
    const route = '/sheets/:sheet_id/custom_fields/:custom_field_id/file';
    const sent = { register: stats.requests[`POST ${route}`] ?? 0, update: stats.requests[`PATCH ${route}`] ?? 0 };

    const lines = [
      `attachment import: ${attachments} files (${Object.entries(made.kinds).map(([k, v]) => `${v} ${k}`).join(', ')}; ${mb(made.bytes)}, ${mb(made.bytes * 4 / 3)} as base64)`,
      `  emulator: generated company of ${members} members without files; sheet 2, file part 1306; clock speed ${CLOCK_SPEED}; client update window ${UPDATE_WINDOW_MS} ms (5 a window)`,
      `  import: ${cli}; malloc: ${MALLOC_ENV}`,
      `  outcomes:            ${outcomes(result.counts)}`,
      `  requests sent:       ${sent.register} register + ${sent.update} update = ${sent.register + sent.update} (emulator count)`,
      `  minimum possible:    ${minimum} (1,000 files and 250 MB of body a request, from the files' sizes; the import's own figure: ${result.requests.minimum})`,
      `  resubmitted files:   ${result.requests.resubmitted}`,
      `  429 answers:         ${stats.rate_limited} (emulator)`,
      `  waited on limits:    ${(result.waited_ms / 1000).toFixed(1)} s`,
      `  max RSS:             ${memory(run)}`,
      `  CPU:                 ${run.cpuS.toFixed(1)} s`,
      `  validation:          ${(result.check_ms / 1000).toFixed(1)} s, ${((attachments * 1000) / result.check_ms).toFixed(0)} files/s`,
      `  total time:          ${(run.ms / 1000).toFixed(1)} s (the whole command)`,
      ...limitBound(run, minimum),
    ];
    console.log(lines.join('\n'));
    if (run.problems.length) console.log(`  problems (first 5): ${JSON.stringify(run.problems)}`);
  } finally {
    if (emulator) await stopEmulator(emulator);
    if (!keep) await rm(dir, { recursive: true, force: true });
    await rm(work, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// --files: memory and time per file at several sizes

/** `count` small files of `kind` in a new folder: photos as `<code>.jpg`, attachments as `<code>/doc-<n>.pdf` (two a member). */
async function makeSmallFiles(kind: 'photos' | 'attachments', count: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `wds-bench-${kind}-`));
  const code = (n: number): string => `G${String(n).padStart(6, '0')}`;
  if (kind === 'photos') {
    const jpeg = await sharp({ create: { width: 64, height: 64, channels: 3, background: { r: 90, g: 120, b: 200 } } }).jpeg().toBuffer();
    for (let i = 1; i <= count; i += 1) await writeFile(join(dir, `${code(i)}.jpg`), jpeg);
    return dir;
  }
  const data = pdf(700);
  for (let i = 0; i < count; i += 1) {
    const member = join(dir, code(Math.floor(i / 2) + 1));
    if (i % 2 === 0) await mkdir(member);
    await writeFile(join(member, `doc-${i % 2}.pdf`), data);
  }
  return dir;
}

async function scaleRun(kind: 'photos' | 'attachments', count: number): Promise<ImportRun> {
  const dir = await makeSmallFiles(kind, count);
  const work = await mkdtemp(join(tmpdir(), 'wds-bench-run-'));
  const emulator = await startEmulator(kind === 'photos' ? count : Math.ceil(count / 2), false);
  try {
    const args = kind === 'photos' ? ['photos', 'import', dir] : ['attachments', 'import', dir, '--sheet', '2', '--field', '1306'];
    const { run } = await importRun(emulator, args, work);
    if (run.problems.length) console.log(`  problems (first 5): ${JSON.stringify(run.problems)}`);
    return run;
  } finally {
    await stopEmulator(emulator);
    await rm(dir, { recursive: true, force: true });
    await rm(work, { recursive: true, force: true });
  }
}

async function scale(cli: string, sizes: number[]): Promise<void> {
  console.log(`import at ${sizes.join(', ')} files; clock speed ${CLOCK_SPEED}; import: ${cli}; load average ${loads()}`);
  for (const kind of ['photos', 'attachments'] as const) {
    if ((kind === 'photos' ? photos : attachments) === 0) continue;
    let first: { count: number; rssKb: number } | undefined;
    for (const count of sizes) {
      const run = await scaleRun(kind, count);
      const grew = first && count > first.count ? `, ${(((run.maxRssKb - first.rssKb) * 1024) / (count - first.count)).toFixed(0)} bytes a file beyond ${first.count}` : '';
      first ??= { count, rssKb: run.maxRssKb };
      console.log(`  ${kind} import of ${count}: ${outcomes(run.summary.counts)}; peak RSS ${(run.maxRssKb / 1024).toFixed(0)} MB${grew}; ` +
        `CPU ${run.cpuS.toFixed(1)} s; ${(run.ms / 1000).toFixed(1)} s (${(run.ms / count).toFixed(2)} ms a file; load average ${loads()})`);
    }
  }
}

const cli = cliPath ? `node ${cliPath} (--cli)` : ensureBuilt(build);
if (fileSizes) await scale(cli, fileSizes);
else {
  if (photos > 0) await photoHalf(cli);
  if (attachments > 0) await attachmentHalf(cli);
}
