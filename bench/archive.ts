/**
 * Snapshot archive benchmark: the shipped CLI (`node dist/cli/main.js run PIPELINE --json`, built
 * first with `npm run build`) archiving a generated company three times: a full first snapshot,
 * an incremental one with nothing changed, and one after 1 % of the files changed. Each run prints
 * its wall time, the storage downloads and API requests the emulator counted, what the new
 * snapshot adds on disk (du-style: blocks of inodes the archive did not hold before, folders
 * included; and the bytes of its new files alone), and the CLI's peak RSS from wait4
 * (bench/max-rss.ts); an incremental run also prints its phases, from its request lines (-vv):
 * start-up, token and listing, and the rest (links, downloads of the changed files, manifest and
 * snapshot.json). Then the targets: the unchanged run makes no storage request and takes at
 * most 5 s; the 1 % run takes at most 0.05 x the full run's wall time and adds at most 0.02 x its
 * bytes.
 *
 *   npx tsx bench/archive.ts                          20,000 attachments (10,000 members x 2)
 *   npx tsx bench/archive.ts --what photos            20,000 photos
 *   npx tsx bench/archive.ts --runs 3                 three rounds, each on a fresh company and
 *                                                     archive; medians with the fastest and slowest
 *   npx tsx bench/archive.ts --files 500 --no-build   a quick check that the bench runs
 *   npx tsx bench/archive.ts --latency 0              storage answering at once (default 20 ms, as a
 *                                                     storage service on the network answers)
 *   npx tsx bench/archive.ts --keep                   leave the archive folder for a look
 *   npx tsx bench/archive.ts --all-changed            one more run after every file changed (all
 *                                                     downloaded again to their paths), its peak RSS
 *   npx tsx bench/archive.ts --repeat 3               after the full run, three pairs of an
 *                                                     unchanged run and a 1 % run (each against the
 *                                                     full run of its round)
 *   npx tsx bench/archive.ts --cli /tmp/b/dist/cli/main.js   another build's CLI (implies --no-build)
 *   npx tsx bench/archive.ts --compare /tmp/b/dist/cli/main.js
 *                                                     each incremental run also by that build, in
 *                                                     turn, on the same archive (each 1 % run after a
 *                                                     1 % change of its own); figures for both
 *   npx tsx bench/archive.ts --cpu-prof DIR           node --cpu-prof of each incremental run into DIR
 *   npx tsx bench/archive.ts --log DIR                each incremental run's request lines (-vv) into DIR
 *   npx tsx bench/archive.ts --store s3               the archive in an S3 bucket, beside the folder
 *                                                     archive and restic (bench/archive-s3.ts)
 *   npx tsx bench/archive.ts --no-disk                leave out what each snapshot adds on disk (its
 *                                                     walk after each run takes minutes at 200,000)
 *   npx tsx bench/archive.ts --files 2000,20000,200000 --bytes 2048-40000
 *                                                     a round at each size, files of 2 to 40 KB (the
 *                                                     default sizes make 100 GB at 200,000); time a
 *                                                     file and peak RSS by size, and whether a full
 *                                                     run's time a file holds as the company grows
 *
 * Beside the first unchanged run it prints its floor: GNU `cp -al` of the snapshot it linked from
 * (its folders and links alone, on one thread, on the same disk) plus that run's token and listing;
 * the target is an unchanged run within 2 x its floor. Peak RSS targets 200 MB for every run. The
 * output starts and ends with `uptime`, since a shared machine's times are rough.
 *
 * Files are of the sizes the export benches use: attachments of 10 KB to 1 MB (documents and
 * scans), photos of 20 to 500 KB (bench/export's mix). The disk ratio depends on them: each
 * snapshot makes its own folders (one per member and file part, 4 KB each on ext4) and its own
 * manifest, which cannot be linked, so the smaller the files the larger their share. The bench
 * prints that split, and `du` on the archive before and after as a check of its own count.
 *
 * The emulator runs in this process (its files are changed here, as another user's uploads would
 * change them); only the CLI is measured.
 *
 * Making folders and files is most of an incremental run, and its cost depends on what the disk
 * freed lately: on ext4 without a journal a new inode skips those freed in the last minute (five
 * while their inode table is unwritten). Run the bench a few minutes after a test run or another
 * bench, which free tens of thousands; its own rounds' folders are removed only at its end.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { startEmulator, DEFAULT_CONSUMER_KEY, DEFAULT_CONSUMER_SECRET, type RunningEmulator } from '../src/emulator/index.js';
import type { Company } from '../src/emulator/company.js';
import type { StoredFile } from '../src/emulator/model.js';
import { peekEntries } from '../src/emulator/lazy-record.js';
import { measure, type Measured } from './max-rss.js';
import { CLI, ensureBuilt } from './shipped-cli.js';
import { removeTree } from '../src/util/remove-tree.js';

const argValue = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const flag = (name: string): boolean => process.argv.includes(`--${name}`);

/** The company sizes measured, one round each (`--files 2000,20000,200000`). */
const SIZES = (argValue('files') ?? '20000').split(',').map((n) => Number(n.replaceAll('_', '')));
const BYTES = argValue('bytes')?.split('-').map(Number) as [number, number] | undefined;
const WHAT = (argValue('what') ?? 'attachments') as 'attachments' | 'photos';
const LATENCY_MS = Number(argValue('latency') ?? 20);
const RUNS = Number(argValue('runs') ?? 1);
const REPEAT = Number(argValue('repeat') ?? 1);
const CLI_PATH = argValue('cli');
const CPU_PROF = argValue('cpu-prof');
/** Leaves out what each snapshot adds on disk: walking 200,000 files after each run takes minutes. */
const NO_DISK = flag('no-disk');
/** After the round's runs, one more after every file changed (the company made again an hour later). */
const ALL_CHANGED = flag('all-changed');
/** Peak RSS target of every run, MB (issue 46). */
const RSS_TARGET_MB = 200;
const LOG_DIR = argValue('log');
/** The builds measured: this one (or --cli), and --compare's, taking turns. */
const CLIS = [CLI_PATH ?? CLI, ...(argValue('compare') ? [argValue('compare')!] : [])];
if (!Number.isInteger(REPEAT) || REPEAT < 1) throw new Error(`--repeat must be a whole number of 1 or more, got ${argValue('repeat')}`);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs must be a whole number of 1 or more, got ${argValue('runs')}`);
if (!(LATENCY_MS >= 0)) throw new Error(`--latency must be a number of milliseconds, got ${argValue('latency')}`);
if (!SIZES.every((n) => Number.isInteger(n) && n >= 2)) throw new Error(`--files must be whole numbers of 2 or more, separated by commas, got ${argValue('files')}`);
if (BYTES && !(BYTES.length === 2 && BYTES.every((n) => Number.isInteger(n) && n > 0) && BYTES[0] <= BYTES[1])) throw new Error(`--bytes must be MIN-MAX in bytes, got ${argValue('bytes')}`);
if (WHAT !== 'attachments' && WHAT !== 'photos') throw new Error(`--what must be attachments or photos, got ${WHAT}`);

/** Every generated member holds two attachments (a contract and one record), or one photo. */
const generateFor = (files: number) => WHAT === 'attachments'
  ? { members: Math.ceil(files / 2), photo_ratio: 0, attachments_per_member: [2, 2] as [number, number], attachment_bytes: BYTES ?? [10_000, 1_000_000] as [number, number] }
  : { members: files, photo_ratio: 1, attachments_per_member: [0, 0] as [number, number], photo_bytes: BYTES ?? [20_000, 500_000] as [number, number] };

/**
 * Every stored file of the company, with a way to give it new bytes of the same size. Read without
 * keeping the generated members (lazy-record.ts); `replace` takes the one it changes.
 */
function filesOf(company: Company): { current: StoredFile; replace: (next: StoredFile) => void }[] {
  const out: { current: StoredFile; replace: (next: StoredFile) => void }[] = [];
  if (WHAT === 'photos') {
    for (const [code, photo] of peekEntries(company.data.photos)) {
      out.push({ current: photo, replace: (next) => (company.data.photos[code] = next) });
    }
    return out;
  }
  for (const sheet of Object.values(company.data.sheets)) {
    for (const [code, records] of peekEntries(sheet.records)) {
      records.forEach((record, i) => {
        for (const [field, file] of Object.entries(record.files)) out.push({ current: file, replace: (next) => (sheet.records[code]![i]!.files[field] = next) });
      });
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

/** What a snapshot adds on disk, in bytes of allocated blocks: its files, its folders, and its manifest, snapshot.json and latest. */
interface Blocks {
  files: number;
  folders: number;
  metadata: number;
}
const METADATA = new Set(['manifest.jsonl', 'snapshot.json', 'latest']);
const sum = (b: Blocks): number => b.files + b.folders + b.metadata;

/**
 * Disk use as du counts it: each inode once (a hard link to one seen before adds nothing), folders
 * included. Folders named in `done` are not walked: a snapshot once finished is not changed, and
 * walking every earlier snapshot again after each run took minutes once there were a dozen.
 */
async function diskUse(dir: string, seen: Set<string>, done: Set<string>): Promise<{ blocks: Blocks; fileBytes: number }> {
  const blocks: Blocks = { files: 0, folders: 0, metadata: 0 };
  let fileBytes = 0;
  const walk = async (path: string): Promise<void> => {
    if (done.has(path)) return;
    const info = await lstat(path);
    const inode = `${info.dev}:${info.ino}`;
    if (!seen.has(inode)) {
      seen.add(inode);
      const kind = info.isDirectory() ? 'folders' : METADATA.has(basename(path)) ? 'metadata' : 'files';
      blocks[kind] += info.blocks * 512;
      if (kind === 'files') fileBytes += info.size;
    }
    if (info.isDirectory()) for (const name of await readdir(path)) await walk(join(path, name));
  };
  await walk(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
  return { blocks, fileBytes };
}

/** `du -s -B1`: bytes of blocks under `dir`, each inode once; 0 when it is not there yet. */
async function du(dir: string): Promise<number> {
  try {
    const { stdout } = await promisify(execFile)('du', ['-s', '-B1', dir]);
    return Number(stdout.split('\t')[0]);
  } catch {
    return 0;
  }
}

interface Row {
  measured: Measured;
  /** What an incremental run's time was spent on, from its request lines (-vv). */
  phases?: string;
  storage: number;
  api: number;
  added: Blocks;
  /** What du counted the archive growing by. */
  duAdded: number;
  addedFileBytes: number;
  snapshotFiles: number;
  /** An incremental run's token and listing, from its request lines (-vv). */
  listingMs?: number;
}

const RUN_NAMES = ['full', 'unchanged', '1 %'] as const;
type RunName = (typeof RUN_NAMES)[number] | 'all changed';
/**
 * A round's runs, with the floor of its unchanged run: `cp -al` of the snapshot it linked from,
 * on the same disk, and the listing that run made.
 */
type Round = Record<(typeof RUN_NAMES)[number], Row> & { changed: number; cli: string; files: number; floor: { cpMs: number; listingMs: number } | null };

const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;
const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

/** The median of `values`, with the smallest and the largest when there are several. */
function spread(values: number[], show: (v: number) => string): string {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 1 ? show(sorted[0]!) : `${show(median(values))} (${show(sorted[0]!)} to ${show(sorted.at(-1)!)})`;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  return sorted.length % 2 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * An incremental run's time, cut at its request lines (`-vv` stamps each with the time its answer
 * came): start-up until the token request left, the token and the listing, then the rest (links,
 * the changed files' downloads, the manifest and snapshot.json) with when the downloads ran.
 */
function phasesOf(stderr: string, started: number, ms: number): { text: string; listingMs?: number } {
  const lines = [...stderr.matchAll(/^(\S+Z) (?:\S+ )?(GET|POST) (\S+) \d+ (\d+) ms$/gm)].map((m) => ({ at: Date.parse(m[1]!) - started, ms: Number(m[4]), storage: m[3]!.startsWith('/storage/') }));
  const api = lines.filter((l) => !l.storage);
  if (api.length === 0) return { text: 'phases: no request lines on stderr' };
  const storage = lines.filter((l) => l.storage);
  const listed = api.at(-1)!.at;
  const downloads = storage.length ? `; downloads from ${seconds(storage.reduce((min, l) => Math.min(min, l.at - l.ms), Infinity))} to ${seconds(storage.reduce((max, l) => Math.max(max, l.at), -Infinity))}` : '';
  const text = `phases: start-up ${seconds(api[0]!.at - api[0]!.ms)}, token and listing to ${seconds(listed)}, links, downloads and snapshot ${seconds(ms - listed)}${downloads}`;
  return { text, listingMs: listed - (api[0]!.at - api[0]!.ms) };
}

/** One round: a fresh company and archive, archived in full, unchanged, and after 1 % changed. */
async function round(n: number, built: string, size: number): Promise<Round[]> {
  const startedAt = performance.now();
  const emu = await startEmulator({ port: 0, generate: generateFor(size), clockStart: '2026-04-01 10:00:00', maintenance: false });
  const emulatorStart = `emulator start ${((performance.now() - startedAt) / 1000).toFixed(2)} s (in this process, rss ${mb(process.memoryUsage().rss)} after it)`;
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
  {
    const files = filesOf(company);
    const bytes = files.reduce((t, f) => t + f.current.size, 0);
    console.log(`bench/archive: ${files.length} ${WHAT} (${mb(bytes)}, ${(bytes / files.length / 1000).toFixed(0)} KB on average); storage latency ${LATENCY_MS} ms; ${emulatorStart}; ${built}; round ${n} of ${RUNS}; uptime: ${await uptime()}`);
  }

  // The archive's inodes so far, and its snapshots already walked (diskUse).
  const seen = new Set<string>();
  const walked = new Set<string>();
  const run = async (name: RunName, label: string, cli = CLIS[0]!): Promise<Row> => {
    const duBefore = NO_DISK ? 0 : await du(archive);
    // A nightly run does not follow the previous run's gigabytes of writes by seconds: their
    // writeback, still going after a full run, made the next run's folders and links wait.
    await promisify(execFile)('sync');
    company.stats.reset();
    const profile = CPU_PROF && name !== 'full' ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF, '--cpu-prof-name', `${n}-${label.replace(/\W+/g, '_')}-${Date.now()}.cpuprofile`] : [];
    const verbose = name === 'full' ? [] : ['-vv'];
    const emulatorCpu = process.cpuUsage();
    const measured = await measure(process.execPath, [...profile, cli, 'run', pipeline, '--json', ...verbose], { env, cwd: work });
    const { user: emulatorUser, system: emulatorSystem } = process.cpuUsage(emulatorCpu);
    // The CLI's start, as the measuring parent forked it: python3's own start is not the CLI's.
    const ended = Date.now();
    if (measured.code !== 0) throw new Error(`${name}: the CLI exited with ${measured.code ?? `signal ${measured.signal}`}:\n${measured.stderr}${measured.stdout}`);
    if (LOG_DIR && name !== 'full') {
      await mkdir(LOG_DIR, { recursive: true });
      await writeFile(join(LOG_DIR, `${n}-${CLIS.indexOf(cli)}-${label.replace(/\W+/g, '_')}-${Date.now()}.log`), measured.stderr);
    }
    const after = NO_DISK ? { blocks: { files: 0, folders: 0, metadata: 0 }, fileBytes: 0 } : await diskUse(archive, seen, walked);
    const stats = company.stats.toJSON() as { requests: Record<string, number>; storage_downloads: number };
    const latest = (await readFile(join(archive, 'latest'), 'utf8')).trim();
    const doc = JSON.parse(await readFile(join(archive, 'snapshots', latest, 'snapshot.json'), 'utf8')) as { counts: { files: number } };
    walked.add(join(archive, 'snapshots', latest));
    const row: Row = {
      measured, storage: stats.storage_downloads, api: Object.values(stats.requests).reduce((a, b) => a + b, 0),
      added: after.blocks, duAdded: NO_DISK ? 0 : (await du(archive)) - duBefore, addedFileBytes: after.fileBytes, snapshotFiles: doc.counts.files,
    };
    if (name !== 'full') {
      const phases = phasesOf(measured.stderr, ended - measured.ms, measured.ms);
      row.phases = phases.text;
      if (phases.listingMs !== undefined) row.listingMs = phases.listingMs;
    }
    const { files, folders, metadata } = row.added;
    const which = CLIS.length > 1 ? `${String.fromCharCode(65 + CLIS.indexOf(cli))} ` : '';
    console.log(`  ${`${n}. ${which}${label}`.padEnd(18)} ${seconds(measured.ms).padStart(8)}  storage ${String(row.storage).padStart(6)}  api ${String(row.api).padStart(3)}  adds ${mb(sum(row.added)).padStart(9)} (files ${mb(files)}, folders ${mb(folders)}, manifest and snapshot.json ${mb(metadata)}; du ${mb(row.duAdded)})  files ${row.snapshotFiles} (${(measured.ms / row.snapshotFiles).toFixed(3)} ms each)  peak RSS ${(measured.maxRssKb / 1024).toFixed(0)} MB  cpu ${measured.userS.toFixed(2)} s user, ${measured.systemS.toFixed(2)} s system (emulator ${((emulatorUser + emulatorSystem) / 1e6).toFixed(2)} s)${row.phases ? `\n     ${row.phases}` : ''}`);
    return row;
  };

  try {
    const full = await run('full', 'full');
    const fullSnapshot = (await readFile(join(archive, 'latest'), 'utf8')).trim();
    const pairs: Round[] = [];
    for (let k = 1; k <= REPEAT; k += 1) {
      // Builds take turns going first.
      const order = k % 2 ? CLIS : [...CLIS].reverse();
      const unchanged = new Map<string, Row>();
      for (const cli of order) unchanged.set(cli, await run('unchanged', 'unchanged', cli));
      for (const cli of order) {
        const changed = changeShare(emu, 0.01);
        pairs.push({ full, unchanged: unchanged.get(cli)!, '1 %': await run('1 %', `1 % (${changed})`, cli), changed, cli, files: size, floor: null });
      }
    }
    // The first unchanged run's floor, after the runs: linking a snapshot's files changes their
    // ctime, which a later run takes for a change made outside the archive's commands.
    const first = pairs[0]!;
    const cpMs = await floor(join(archive, 'snapshots', fullSnapshot), join(work, 'floor-copy'));
    if (cpMs !== null && first.unchanged.listingMs !== undefined) {
      first.floor = { cpMs, listingMs: first.unchanged.listingMs };
      const total = cpMs + first.unchanged.listingMs;
      console.log(`  floor of the first unchanged run: cp -al of snapshot ${fullSnapshot} ${seconds(cpMs)} + its listing ${seconds(first.unchanged.listingMs)} = ${seconds(total)}; the run took ${(first.unchanged.measured.ms / total).toFixed(2)} x that`);
    }
    if (ALL_CHANGED) {
      // Every file dated anew: the service's clock an hour on, and the generated company made again.
      emu.emulator.clock.advance(3600);
      await company.reset();
      const all = await run('all changed', 'all changed');
      if (all.storage !== all.snapshotFiles) throw new Error(`all changed: ${all.storage} storage downloads for ${all.snapshotFiles} files`);
      console.log(`  all changed: peak RSS ${(all.measured.maxRssKb / 1024).toFixed(0)} MB (target ${RSS_TARGET_MB} MB: ${all.measured.maxRssKb / 1024 <= RSS_TARGET_MB ? 'met' : 'NOT met'}); ${(all.measured.ms / all.snapshotFiles).toFixed(3)} ms a file against the full run's ${(full.measured.ms / full.snapshotFiles).toFixed(3)}`);
    }
    return pairs;
  } finally {
    await emu.close();
    works.push(work);
  }
}

/**
 * What making a snapshot's folders and links costs this disk with no JavaScript, no listing and
 * no download: GNU `cp -al` of the latest snapshot (mkdir, lstat and link of each), on one thread.
 * Run after the round's runs, whose folders it would otherwise slow (it is removed at the end).
 */
async function floor(snapshot: string, to: string): Promise<number | null> {
  await promisify(execFile)('sync');
  const copy = await measure('cp', ['-al', snapshot, to]);
  if (copy.code !== 0) {
    console.log(`     floor: cp -al failed (${copy.code ?? copy.signal}): ${copy.stderr.trim()}`);
    return null;
  }
  return copy.ms;
}

/** The machine's load, printed beside the figures: a shared machine's times are rough. */
async function uptime(): Promise<string> {
  return (await promisify(execFile)('uptime')).stdout.trim();
}

/**
 * The rounds' folders, removed when the bench ends rather than after each round: on ext4 without
 * a journal (this machine's disk), a new inode skips those freed in the last minute (five while
 * their inode table is unwritten), one lookup each, and a round's 60,000 freed folders and files
 * made the next round's folders and files cost up to three times the CPU (perf: recently_deleted).
 */
const works: string[] = [];

async function main(): Promise<void> {
  const built = [CLI_PATH ? `A: node ${CLI_PATH} (--cli)` : ensureBuilt(!flag('no-build')), ...CLIS.slice(1).map((cli) => `B: node ${cli} (--compare)`)].join('; ');
  const all: Round[] = [];
  try {
    for (const size of SIZES) for (let n = 1; n <= RUNS; n += 1) all.push(...(await round(n, built, size)));
  } finally {
    for (const work of works) {
      if (flag('keep')) console.log(`kept ${work}`);
      else await removeTree(work);
    }
  }
  for (const [i, cli] of CLIS.entries()) {
    if (CLIS.length > 1) console.log(`${String.fromCharCode(65 + i)}: ${cli}`);
    for (const size of SIZES) summarise(all.filter((r) => r.cli === cli && r.files === size), size);
    if (SIZES.length > 1) scaling(all.filter((r) => r.cli === cli));
  }
  console.log(`uptime: ${await uptime()}`);
}

/** Medians of the rounds of one build and size, and the targets. */
function summarise(rounds: Round[], files: number): void {
  const of = (name: (typeof RUN_NAMES)[number], value: (row: Row) => number): number[] => rounds.map((r) => value(r[name]));
  console.log(`${files} files, ${rounds.length === 1 ? 'runs:' : `medians of ${RUNS} round${RUNS === 1 ? '' : 's'}${REPEAT > 1 ? ` of ${REPEAT} incremental pairs each` : ''} (fastest to slowest):`}`);
  for (const name of RUN_NAMES) {
    console.log(`  ${name.padEnd(10)} ${spread(of(name, (r) => r.measured.ms), seconds)} (${spread(of(name, (r) => r.measured.ms / files), (v) => `${v.toFixed(3)} ms`)} a file), adds ${spread(of(name, (r) => sum(r.added)), mb)} on disk, peak RSS ${spread(of(name, (r) => r.measured.maxRssKb / 1024), (v) => `${v.toFixed(0)} MB`)}`);
  }
  const check = (ok: boolean, text: string): void => console.log(`${ok ? 'ok  ' : 'MISS'} ${text}`);
  const ratio = (values: number[]): string => spread(values, (v) => v.toFixed(3));
  const unchangedStorage = of('unchanged', (r) => r.storage);
  const unchangedMs = of('unchanged', (r) => r.measured.ms);
  const time = rounds.map((r) => r['1 %'].measured.ms / r.full.measured.ms);
  const disk = rounds.map((r) => sum(r['1 %'].added) / sum(r.full.added));
  const newFiles = rounds.map((r) => r['1 %'].added.files / r.full.added.files);
  console.log('targets (medians):');
  check(unchangedStorage.every((n) => n === 0), `unchanged run: ${unchangedStorage.join(', ')} storage requests (target 0)`);
  if (files <= 20_000) check(median(unchangedMs) <= 5000, `unchanged run: ${spread(unchangedMs, seconds)} (target <= 5 s)`);
  const floors = rounds.filter((r) => r.floor).map((r) => r.unchanged.measured.ms / (r.floor!.cpMs + r.floor!.listingMs));
  if (floors.length > 0) check(median(floors) <= 2, `unchanged run: ${ratio(floors)} x its floor, cp -al of the snapshot it linked from plus its listing (target <= 2)`);
  check(rounds.every((r) => r['1 %'].storage === r.changed), `1 % run: ${rounds.map((r) => `${r['1 %'].storage} storage requests for ${r.changed} changed files`).join('; ')}`);
  check(median(time) <= 0.05, `1 % run: ${ratio(time)} x the full run's wall time (target <= 0.05)`);
  // A 1 % run is an unchanged run plus its changed files' downloads, which at the full run's pace
  // take their share of its files: where the unchanged run alone is near 0.05, no download speed helps.
  const fixed = rounds.map((r) => r.unchanged.measured.ms / r.full.measured.ms);
  const changed = median(rounds.map((r) => r.changed));
  console.log(`     made of: the unchanged run, ${ratio(fixed)} x; and the ${changed} changed files, ${(changed / files).toFixed(3)} x at the full run's pace`);
  // --no-disk leaves what the runs add uncounted: there is no ratio to print.
  if (NO_DISK) console.log('     1 % run: bytes added on disk not counted (--no-disk)');
  else check(median(disk) <= 0.02, `1 % run: adds ${ratio(disk)} x the full run's bytes on disk, folders and manifest included (target <= 0.02); its new files alone ${ratio(newFiles)} x`);
  for (const name of RUN_NAMES) {
    const rss = of(name, (r) => r.measured.maxRssKb / 1024);
    check(median(rss) <= RSS_TARGET_MB, `${name} run: peak RSS ${spread(rss, (v) => `${v.toFixed(0)} MB`)} (target <= ${RSS_TARGET_MB} MB)`);
  }
}

/** Across sizes: each run's time a file and peak RSS, and whether a full run's time a file holds as the company grows. */
function scaling(rounds: Round[]): void {
  console.log('by size (medians): files | run | time | time a file | peak RSS');
  const perFile = new Map<number, number>();
  for (const size of SIZES) {
    const of = rounds.filter((r) => r.files === size);
    for (const name of RUN_NAMES) {
      const ms = median(of.map((r) => r[name].measured.ms));
      if (name === 'full') perFile.set(size, ms / size);
      console.log(`  ${String(size).padStart(8)} | ${name.padEnd(9)} | ${seconds(ms).padStart(9)} | ${(ms / size).toFixed(3)} ms | ${median(of.map((r) => r[name].measured.maxRssKb / 1024)).toFixed(0)} MB`);
    }
    const floors = of.filter((r) => r.floor).map((r) => r.floor!.cpMs + r.floor!.listingMs);
    if (floors.length > 0) console.log(`  ${String(size).padStart(8)} | floor     | ${seconds(median(floors)).padStart(9)} | cp -al of the snapshot plus the unchanged run's listing`);
  }
  const sorted = [...SIZES].sort((a, b) => a - b);
  for (let i = 1; i < sorted.length; i += 1) {
    const [small, large] = [sorted[i - 1]!, sorted[i]!];
    const grown = perFile.get(large)! / perFile.get(small)!;
    console.log(`${grown <= 1.2 ? 'ok  ' : 'MISS'} full run: time a file at ${large} is ${grown.toFixed(2)} x that at ${small} (target <= 1.2)`);
  }
}

// The bucket archive's bench, beside the folder archive and restic (bench/archive-s3.ts).
const STORE = argValue('store') ?? 'folder';
if (STORE !== 'folder' && STORE !== 's3') throw new Error(`--store must be folder or s3, got ${STORE}`);
if (STORE === 's3') await (await import('./archive-s3.js')).benchS3();
else await main();
