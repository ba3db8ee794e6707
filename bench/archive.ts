/**
 * Snapshot archive benchmark: the shipped CLI (`node dist/cli/main.js run PIPELINE --json`, built
 * first with `npm run build`) archiving a generated company three times: a full first snapshot,
 * an incremental one with nothing changed, and one after 1 % of the files changed. Each run prints
 * its wall time, the storage downloads and API requests the emulator counted, what the new
 * snapshot adds on disk (du-style: blocks of inodes the archive did not hold before, folders
 * included; and the bytes of its new files alone), and the CLI's peak RSS from wait4
 * (bench/max-rss.ts). Then the targets: the unchanged run makes no storage request and takes at
 * most 5 s; the 1 % run takes at most 0.05 x the full run's wall time and adds at most 0.02 x its
 * bytes.
 *
 *   npx tsx bench/archive.ts                          20,000 attachments (10,000 members x 2)
 *   npx tsx bench/archive.ts --what photos            20,000 photos
 *   npx tsx bench/archive.ts --files 500 --no-build   a quick check that the bench runs
 *   npx tsx bench/archive.ts --latency 0              storage answering at once (default 20 ms, as a
 *                                                     storage service on the network answers)
 *   npx tsx bench/archive.ts --keep                   leave the archive folder for a look
 *
 * The emulator runs in this process (its files are changed here, as another user's uploads would
 * change them); only the CLI is measured.
 */
import { randomBytes } from 'node:crypto';
import { lstat, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmulator, DEFAULT_CONSUMER_KEY, DEFAULT_CONSUMER_SECRET, type RunningEmulator } from '../src/emulator/index.js';
import type { Company } from '../src/emulator/company.js';
import type { StoredFile } from '../src/emulator/model.js';
import { measure, type Measured } from './max-rss.js';
import { CLI, ensureBuilt } from './shipped-cli.js';

const argValue = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const flag = (name: string): boolean => process.argv.includes(`--${name}`);

const FILES = Number(argValue('files') ?? 20_000);
const WHAT = (argValue('what') ?? 'attachments') as 'attachments' | 'photos';
const LATENCY_MS = Number(argValue('latency') ?? 20);
if (!(LATENCY_MS >= 0)) throw new Error(`--latency must be a number of milliseconds, got ${argValue('latency')}`);
if (!Number.isInteger(FILES) || FILES < 2) throw new Error(`--files must be a whole number of 2 or more, got ${argValue('files')}`);
if (WHAT !== 'attachments' && WHAT !== 'photos') throw new Error(`--what must be attachments or photos, got ${WHAT}`);

/** Every generated member holds two attachments (a contract and one record), or one photo. */
const generate = WHAT === 'attachments'
  ? { members: Math.ceil(FILES / 2), photo_ratio: 0, attachments_per_member: [2, 2] as [number, number], attachment_bytes: [5_000, 60_000] as [number, number] }
  : { members: FILES, photo_ratio: 1, attachments_per_member: [0, 0] as [number, number], photo_bytes: [20_000, 60_000] as [number, number] };

/** Every stored file of the company, with a way to give it new bytes of the same size. */
function filesOf(company: Company): { current: StoredFile; replace: (next: StoredFile) => void }[] {
  const out: { current: StoredFile; replace: (next: StoredFile) => void }[] = [];
  if (WHAT === 'photos') {
    for (const [code, photo] of Object.entries(company.data.photos)) {
      if (photo) out.push({ current: photo, replace: (next) => (company.data.photos[code] = next) });
    }
    return out;
  }
  for (const sheet of Object.values(company.data.sheets)) {
    for (const records of Object.values(sheet.records)) {
      for (const record of records) {
        for (const [field, file] of Object.entries(record.files)) out.push({ current: file, replace: (next) => (record.files[field] = next) });
      }
    }
  }
  return out;
}

/** Changes `share` of the files (spread over the company): new bytes, a later updated_at. */
function changeShare(emu: RunningEmulator, share: number): number {
  const company = emu.emulator.company()!;
  emu.emulator.clock.advance(120);
  const files = filesOf(company);
  const count = Math.max(1, Math.round(files.length * share));
  const step = files.length / count;
  for (let i = 0; i < count; i += 1) {
    const { current, replace } = files[Math.floor(i * step)]!;
    replace(company.storeFile(randomBytes(current.size), current.file_name, current));
  }
  return count;
}

/** Disk use as du counts it: each inode once, folders included, in bytes of allocated blocks. */
async function diskUse(dir: string, seen = new Set<string>()): Promise<{ blocks: number; fileBytes: number; seen: Set<string> }> {
  let blocks = 0;
  let fileBytes = 0;
  const walk = async (path: string): Promise<void> => {
    const info = await lstat(path);
    const inode = `${info.dev}:${info.ino}`;
    if (!seen.has(inode)) {
      seen.add(inode);
      blocks += info.blocks * 512;
      if (info.isFile()) fileBytes += info.size;
    }
    if (info.isDirectory()) for (const name of await readdir(path)) await walk(join(path, name));
  };
  await walk(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
  return { blocks, fileBytes, seen };
}

interface Row {
  name: string;
  measured: Measured;
  storage: number;
  api: number;
  addedBlocks: number;
  addedFileBytes: number;
  snapshotFiles: number;
}

const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;

async function main(): Promise<void> {
  const built = ensureBuilt(!flag('no-build'));
  const emu = await startEmulator({ port: 0, generate, clockStart: '2026-04-01 10:00:00', maintenance: false });
  emu.emulator.storageFaults.configure({ latency_ms: LATENCY_MS });
  const work = await mkdtemp(join(tmpdir(), 'wds-bench-archive-'));
  const archive = join(work, 'archive');
  const pipeline = join(work, 'archive.yaml');
  await writeFile(pipeline, [
    'name: bench-archive',
    `connection: { base_url: "${emu.url}", consumer_key: ${DEFAULT_CONSUMER_KEY}, consumer_secret: ${DEFAULT_CONSUMER_SECRET} }`,
    `from: { service: ${WHAT} }`,
    'to: { archive: ./archive }',
    '',
  ].join('\n'));
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: join(work, 'cache'), XDG_STATE_HOME: join(work, 'state') };
  for (const name of ['WDS_BASE_URL', 'WDS_CONSUMER_KEY', 'WDS_CONSUMER_SECRET']) delete env[name];
  const company = emu.emulator.company()!;
  const total = filesOf(company).length;
  console.log(`bench/archive: ${total} ${WHAT} (${mb(filesOf(company).reduce((n, f) => n + f.current.size, 0))}); storage latency ${LATENCY_MS} ms; ${built}; archive ${archive}`);

  const rows: Row[] = [];
  const run = async (name: string): Promise<Row> => {
    const before = await diskUse(archive);
    company.stats.reset();
    const measured = await measure(process.execPath, [CLI, 'run', pipeline, '--json'], { env, cwd: work });
    if (measured.code !== 0) throw new Error(`${name}: the CLI exited with ${measured.code ?? `signal ${measured.signal}`}:\n${measured.stderr}${measured.stdout}`);
    const after = await diskUse(archive, before.seen);
    const stats = company.stats.toJSON() as { requests: Record<string, number>; storage_downloads: number };
    const latest = (await readFile(join(archive, 'latest'), 'utf8')).trim();
    const doc = JSON.parse(await readFile(join(archive, 'snapshots', latest, 'snapshot.json'), 'utf8')) as { counts: { files: number } };
    const row: Row = {
      name, measured, storage: stats.storage_downloads, api: Object.values(stats.requests).reduce((a, b) => a + b, 0),
      addedBlocks: after.blocks, addedFileBytes: after.fileBytes, snapshotFiles: doc.counts.files,
    };
    rows.push(row);
    console.log(`${name.padEnd(12)} ${(measured.ms / 1000).toFixed(2).padStart(7)} s  storage ${String(row.storage).padStart(6)}  api ${String(row.api).padStart(4)}  adds ${mb(row.addedBlocks).padStart(9)} on disk (${mb(row.addedFileBytes)} of new files)  files ${row.snapshotFiles}  peak RSS ${(measured.maxRssKb / 1024).toFixed(0)} MB`);
    return row;
  };

  try {
    const full = await run('full');
    const unchanged = await run('unchanged');
    const changed = changeShare(emu, 0.01);
    const onePercent = await run(`1 % (${changed})`);
    const check = (ok: boolean, text: string): void => console.log(`${ok ? 'ok  ' : 'MISS'} ${text}`);
    console.log('targets:');
    check(unchanged.storage === 0, `unchanged run: ${unchanged.storage} storage requests (target 0)`);
    check(unchanged.measured.ms <= 5000, `unchanged run: ${(unchanged.measured.ms / 1000).toFixed(2)} s (target <= 5 s)`);
    check(onePercent.storage === changed, `1 % run: ${onePercent.storage} storage requests for ${changed} changed files`);
    const time = onePercent.measured.ms / full.measured.ms;
    check(time <= 0.05, `1 % run: ${time.toFixed(3)} x the full run's wall time (target <= 0.05)`);
    const disk = onePercent.addedBlocks / full.addedBlocks;
    check(disk <= 0.02, `1 % run: adds ${disk.toFixed(4)} x the full run's bytes on disk, folders included (target <= 0.02); ${(onePercent.addedFileBytes / full.addedFileBytes).toFixed(4)} x counting new files alone`);
  } finally {
    await emu.close();
    if (flag('keep')) console.log(`kept ${work}`);
    else await rm(work, { recursive: true, force: true });
  }
}

await main();
