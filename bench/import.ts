/**
 * Photo import benchmark (issue 5): 1,000 real photos made here with sharp (JPEGs of 50 KB to
 * 2 MB sent as they are, and HEIC, WebP and oversized JPEGs to convert) imported into a generated
 * company of an emulator in a process of its own, at clock speed 60 (one service minute per
 * second), with the client's update window set to 1,000 ms so that the service's 5 update
 * requests a minute hold. The import runs in a child process too, built into one file with
 * esbuild as the published CLI runs, so its peak RSS is the import's alone.
 *
 *   npx tsx bench/import.ts                   1,000 photos, trimming off
 *   npx tsx bench/import.ts --photos 300 --trim --keep
 *
 * Prints: requests sent per route against the minimum (ceil(photos / 100) per route, from the
 * emulator's own state before the run), 429 answers (emulator stats), peak RSS of the importing
 * process, files per second of validation and normalisation (the import's checkMs), total time.
 * The company has photos for 90 % of its members, so both register and update are used.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { heic } from '../test/import/heic.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const CLOCK_SPEED = 60;
const UPDATE_WINDOW_MS = 60_000 / CLOCK_SPEED;
const PER_REQUEST = 100;

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const photos = Number(argValue('photos') ?? 1000);
const keep = process.argv.includes('--keep');
const trimming = process.argv.includes('--trim');
if (!Number.isInteger(photos) || photos < 10) throw new Error(`--photos must be a whole number of at least 10, got ${argValue('photos')}`);

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
// Processes

/** The import child compiled into one ESM file next to node_modules (so its packages resolve). */
async function buildChild(): Promise<{ args: string[]; note: string }> {
  const outfile = join(ROOT, 'node_modules', '.cache', 'wds-bench', 'import-child.mjs');
  try {
    const esbuild = await import('esbuild');
    await esbuild.build({
      entryPoints: [join(HERE, 'import-child.ts')], bundle: true, platform: 'node', format: 'esm', target: 'node20',
      packages: 'external', outfile, logLevel: 'warning',
    });
    return { args: [outfile], note: 'compiled with esbuild' };
  } catch (error) {
    return { args: ['--import', 'tsx', join(HERE, 'import-child.ts')], note: `run through tsx (esbuild: ${(error as Error).message})` };
  }
}

interface Emulator {
  baseUrl: string;
  consumerKey: string;
  consumerSecret: string;
  child: ChildProcess;
}

async function startEmulator(members: number): Promise<Emulator> {
  const args = [
    '--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'emulator', '--port', '0', '--json', '--generate', String(members),
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

function runChild(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`the import child exited with ${code}`))));
  });
}

// ---------------------------------------------------------------------------------------------
// The run

interface ChildResult {
  ms: number;
  counts: Record<string, number>;
  requests: { register: number; update: number; minimum: number; resubmitted: number };
  check_ms: number;
  waited_ms: number;
  rate_limited: number;
  peak_rss_kb: number | null;
  peak_rss_check_mb: number;
  peak_rss_send_mb: number;
  problems: unknown[];
}

interface Stats {
  requests: Record<string, number>;
  update_requests: number;
  rate_limited: number;
}

const dir = await mkdtemp(join(tmpdir(), 'wds-bench-import-'));
let emulator: Emulator | undefined;
try {
  process.stderr.write(`making ${photos} photos in ${dir} ...\n`);
  const madeStarted = performance.now();
  const made = await makePhotos(dir, photos);
  process.stderr.write(`made in ${((performance.now() - madeStarted) / 1000).toFixed(1)} s; starting the emulator and the import ...\n`);
  const child = await buildChild();
  emulator = await startEmulator(photos);

  // The minimum, from the emulator's own state: members with a photo take update, the rest register.
  const before = await control<{ members: { code: string; photo: unknown }[] }>(emulator, '/state');
  const withPhoto = before.members.filter((m) => m.photo).length;
  const minimum = { register: Math.ceil((photos - withPhoto) / PER_REQUEST), update: Math.ceil(withPhoto / PER_REQUEST) };
  await fetch(`${emulator.baseUrl}/_emulator/stats/reset`, { method: 'POST' });

  const options = {
    base_url: emulator.baseUrl, consumer_key: emulator.consumerKey, consumer_secret: emulator.consumerSecret,
    source: dir, update_window_ms: UPDATE_WINDOW_MS, trimming,
  };
  const result = JSON.parse((await runChild([...child.args, JSON.stringify(options)])).trim().split('\n').pop()!) as ChildResult;
  const stats = await control<Stats>(emulator, '/stats');
  const sent = { register: stats.requests['POST /members/face_image'] ?? 0, update: stats.requests['PATCH /members/face_image'] ?? 0 };

  const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;
  const lines = [
    `photo import: ${photos} photos (${Object.entries(made.kinds).map(([k, v]) => `${v} ${k}`).join(', ')}; ${mb(made.bytes)}), trimming ${trimming ? 'on' : 'off'}`,
    `  emulator: generated company of ${photos} members, ${withPhoto} with a photo; clock speed ${CLOCK_SPEED}; client update window ${UPDATE_WINDOW_MS} ms (5 a window)`,
    `  import child: ${child.note}`,
    `  outcomes:            ${Object.entries(result.counts).filter(([, v]) => v).map(([k, v]) => `${v} ${k}`).join(', ')}`,
    `  requests sent:       ${sent.register} register + ${sent.update} update = ${sent.register + sent.update} (emulator count)`,
    `  minimum possible:    ${minimum.register} register + ${minimum.update} update = ${minimum.register + minimum.update} (ceil(photos/100) per route; the import's own figure: ${result.requests.minimum})`,
    `  resubmitted files:   ${result.requests.resubmitted}`,
    `  429 answers:         ${stats.rate_limited} (emulator), ${result.rate_limited} (client)`,
    `  waited on limits:    ${(result.waited_ms / 1000).toFixed(1)} s`,
    `  peak RSS (import):   ${result.peak_rss_kb === null ? 'n/a' : `${(result.peak_rss_kb / 1024).toFixed(0)} MB`} (sampled: ${result.peak_rss_check_mb} MB checking and converting, ${result.peak_rss_send_mb} MB sending)`,
    `  check and convert:   ${(result.check_ms / 1000).toFixed(1)} s, ${((photos * 1000) / result.check_ms).toFixed(0)} files/s`,
    `  total time:          ${(result.ms / 1000).toFixed(1)} s`,
  ];
  console.log(lines.join('\n'));
  if (result.problems.length) console.log(`  problems (first 5): ${JSON.stringify(result.problems)}`);
} finally {
  if (emulator) await stopEmulator(emulator);
  if (!keep) await rm(dir, { recursive: true, force: true });
}
