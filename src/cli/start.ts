/**
 * `npm start`: the main job against the embedded emulator with the sample company (DESIGN.md
 * section 3): a photo export to a folder, an attachment export to a zip, both verified, then
 * pipelines/nightly-attachments.yaml run twice into its snapshot archive (the second run fetches
 * nothing), and a short summary of what is where. If the real time falls in the 01:00-01:30 maintenance window of Japan
 * time, or in the LEAD_MINUTES before it, the service clock starts at 01:30, so that no request of the runs is refused.
 */
import { relative, resolve } from 'node:path';
import { readFile } from 'node:fs/promises';
import { startEmulator } from '../emulator/index.js';
import { Clock } from '../emulator/clock.js';
import { DEFAULT_CONSUMER_KEY, DEFAULT_CONSUMER_SECRET } from '../emulator/config.js';
import { WdsClient } from '../client/client.js';
import { runExport } from '../pipelines/export.js';
import { verifyExport } from '../pipelines/verify.js';
import { PACKAGE_ROOT, SAMPLE_COMPANY_DIR } from './paths.js';
import { loadPipelineFile } from '../pipeline-files/load.js';
import { runPipelineOnce, type PipelineRunResult } from '../pipeline-files/run.js';
import { MAINTENANCE_WINDOW } from '../spec/limits.js';
import { formatBytes } from './progress.js';
import { EXIT } from './exit-codes.js';
import { Preflight } from './preflight.js';
import type { TargetLock } from '../util/target-lock.js';

const clock = new Clock();
const minute = clock.minuteOfDay();
/** The job takes well under this: started at 00:59, its later requests would meet the window. */
const LEAD_MINUTES = 10;
const nearWindow = minute >= MAINTENANCE_WINDOW.startMinute - LEAD_MINUTES && minute < MAINTENANCE_WINDOW.endMinute;
const clockStart = nearWindow ? `${clock.formatDate()} 01:30:00` : undefined;

const out = resolve(process.env.WDS_OUT ?? 'out');
const photosDir = resolve(out, 'photos');
const attachmentsZip = resolve(out, 'attachments.zip');

const emulator = await startEmulator({ port: 0, seed: SAMPLE_COMPANY_DIR, clockStart });
console.log(`Emulator of the Workforce Data Service with the sample company at ${emulator.url}`);
console.log(`  (consumer key ${DEFAULT_CONSUMER_KEY}, consumer secret ${DEFAULT_CONSUMER_SECRET}; service clock ${emulator.emulator.clock.format()})`);

const client = new WdsClient({
  baseUrl: emulator.url,
  consumerKey: DEFAULT_CONSUMER_KEY,
  consumerSecret: DEFAULT_CONSUMER_SECRET,
  stateFile: false,
  onWait: (e) => console.log(`  ${e.message}`),
});

let problems = 0;
// Both targets locked before anything is written: two `npm start` at once would write the same files.
const targets = new Preflight({});
let locks: TargetLock[] = [];
try {
  try {
    locks = [await targets.exportTarget(photosDir, { zip: false, force: false }), await targets.exportTarget(attachmentsZip, { zip: true, force: false })];
  } catch (error) {
    console.error(`npm start: ${(error as Error).message}`);
    process.exit(EXIT.fatal);
  }
  // A rerun resumes both: the folder by its manifest, the zip by copying the entries it holds.
  const photos = await runExport({ client, what: 'photos', out: photosDir, lock: false, held: locks[0] });
  const attachments = await runExport({ client, what: 'attachments', out: attachmentsZip, lock: false, held: locks[1] });
  const checkPhotos = await verifyExport(photosDir);
  const checkZip = await verifyExport(attachmentsZip);
  problems = photos.report.problems + attachments.report.problems + checkPhotos.problems.length + checkZip.problems.length;

  const line = (label: string, r: typeof photos, check: typeof checkPhotos): string =>
    `  ${label.padEnd(12)} ${String(r.report.counts.ok).padStart(4)} downloaded, ${String(r.report.counts.skipped).padStart(3)} already there, ` +
    `${r.report.counts.failed} failed; ${formatBytes(check.bytes)}; verify: ${check.ok}/${check.files} match -> ${r.out}`;
  console.log('\nDone:');
  console.log(line('photos', photos, checkPhotos));
  console.log(line('attachments', attachments, checkZip));
  for (const p of [...checkPhotos.problems, ...checkZip.problems]) console.log(`  verify problem: ${p.path}: ${p.problem}`);
  console.log(`\nEach export has a manifest.jsonl (one line per file: code, sheet, field, record, original name, size, sha256).`);

  problems += await nightlyArchiveTwice();
  console.log(`\nNext: npm run --silent wds -- --help   (the CLI: emulator, api, photos export, attachments export, verify, run, archive, schedule, legacy)`);
} finally {
  await targets.end();
  await client.close();
  await emulator.close();
}
process.exitCode = problems ? EXIT.partial : EXIT.ok;

/** The part of an archive's snapshot.json shown here. */
interface SnapshotJson {
  counts: { files: number };
  bytes: { total: number; new: number };
  unchanged_files?: string;
}

/**
 * The nightly archive pipeline as `wds-files run` runs it, twice against this emulator: the first
 * run downloads every attachment into a snapshot, the second finds nothing changed and makes its
 * snapshot of hard links, with no storage download. Returns the runs' problems.
 */
async function nightlyArchiveTwice(): Promise<number> {
  const file = resolve(PACKAGE_ROOT, 'pipelines', 'nightly-attachments.yaml');
  const env = { ...process.env, WDS_BASE_URL: emulator.url, WDS_CONSUMER_KEY: DEFAULT_CONSUMER_KEY, WDS_CONSUMER_SECRET: DEFAULT_CONSUMER_SECRET };
  const loaded = await loadPipelineFile(file, env);
  // The file's archive is out/archive/attachments beside pipelines/; WDS_OUT moves it with the rest.
  const pipeline = { ...loaded, to: { archive: resolve(out, 'archive', 'attachments') } };
  const stats = emulator.emulator.companies[0]!.stats;
  console.log(`\nNightly archive (pipelines/nightly-attachments.yaml, as \`wds-files run\` runs it), twice:`);
  let problems = 0;
  let last: PipelineRunResult | undefined;
  let downloads = 0;
  for (const run of [1, 2]) {
    const downloadsBefore = stats.storage_downloads;
    last = await runPipelineOnce(pipeline, { env, command: 'npm start' });
    const { summary } = last;
    downloads = stats.storage_downloads - downloadsBefore;
    if (summary.status !== 'ok') problems += 1;
    const snapshotLine = last.lines.find((l) => l.startsWith('snapshot ')) ?? `no snapshot (${summary.status}${summary.error ? `: ${summary.error}` : ''})`;
    console.log(`  run ${run}: ${snapshotLine}; ${downloads} file${downloads === 1 ? '' : 's'} downloaded from storage, ${formatBytes(summary.bytes)}`);
  }
  const id = last?.summary.snapshot;
  if (id) {
    const dir = resolve(pipeline.to.archive, 'snapshots', id);
    const held = JSON.parse(await readFile(resolve(dir, 'snapshot.json'), 'utf8')) as SnapshotJson;
    if (downloads === 0) console.log(`  The second run fetched nothing: its unchanged files are ${held.unchanged_files ?? 'hard links'} to the first run's.`);
    console.log(`  Snapshot ${id} (now \`latest\`) holds ${held.counts.files} files, ${formatBytes(held.bytes.total)}, of which ${formatBytes(held.bytes.new)} new: ${dir}`);
    console.log(`    npm run --silent wds -- archive show ${relative(process.cwd(), pipeline.to.archive) || '.'} latest     # what it holds, by member`);
  }
  return problems;
}
