/**
 * The commands that read an archive or an export keep what does not grow with its files (issue
 * 46): each runs as the real CLI with its old generation held to HEAP_LIMIT_MB against one archive
 * of two snapshots of FILES tiny files, made once (test/helpers/synthetic-archive.ts). Before,
 * check held an object a file and snapshot, diff (through the CLI) both manifests as maps, restore
 * the whole manifest as a map even for one member, verify the manifest as a map and every path of
 * the folder or entry of the zip, copy each manifest as a string and a map and every file of the
 * destination in a map; each ran out of heap at 16 MB with 10,000 files a snapshot (copy at 16 MB
 * with 20,000). They now finish with 20,000 (check, diff and verify at 12 MB). verify --report kept
 * every file's item in memory and wrote the report from one string: out of heap at 12 MB. show
 * parsed the whole manifest into a map and an array: out of heap at 16 MB, as did a restore into a
 * zip that holds another snapshot (its lines read and sorted whole to find the files that would mix),
 * and an import source of a snapshot (the manifest's text parsed into a map and a sorted array).
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { pathToFileURL } from 'node:url';
import { CLI_BUILD, runCli, type CliRun } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { makeSyntheticArchive, type SyntheticArchive } from '../helpers/synthetic-archive.js';

const FILES = 20_000;
/** Old-generation limit of the CLI (--max-old-space-size), MB. */
const HEAP_LIMIT_MB = 16;
/** verify's: verify --report kept every item in memory, and ran out of heap at 12 MB. */
const VERIFY_HEAP_MB = 12;

let made: SyntheticArchive;

beforeAll(async () => {
  made = await makeSyntheticArchive(join(tempDir('wds-readers-memory-'), 'archive'), FILES);
}, 300_000);

/** The CLI under the heap limit; its JSON document, once it ended well. */
async function bounded(args: string[], code = 0, heapMb = HEAP_LIMIT_MB): Promise<Record<string, unknown>> {
  const run: CliRun = await runCli([...args, '--json'], { NODE_OPTIONS: `--max-old-space-size=${heapMb}` });
  expect(run.stderr).not.toContain('heap out of memory');
  expect(run.code, run.stderr.slice(-2000)).toBe(code);
  return JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
}

it(`archive check of ${FILES} files a snapshot, and --read-data 5`, async () => {
  const plain = await bounded(['archive', 'check', made.archive]);
  expect(plain).toMatchObject({ snapshots: 2, files: 2 * FILES, problems: [] });
  const read = await bounded(['archive', 'check', made.archive, '--read-data', '5']);
  // The files linked into both snapshots are read once: the groups are the distinct files.
  const distinct = FILES + made.changed + made.added;
  expect(read).toMatchObject({ files: 2 * FILES, read: Math.ceil(distinct * 0.05), problems: [] });
}, 300_000);

it(`archive show of a snapshot of ${FILES} files`, async () => {
  const shown = await bounded(['archive', 'show', made.archive]);
  expect(shown).toMatchObject({ counts: { files: FILES, members: FILES / 10 }, summary: { photos: 0, attachments: { 'sheet 1, field 2': FILES } } });
}, 300_000);

it(`archive diff of ${FILES} files a snapshot`, async () => {
  const diff = await bounded(['archive', 'diff', made.archive, 'latest~1', 'latest']);
  expect(diff.counts).toEqual({ added: made.added, changed: made.changed, deleted: made.deleted });
}, 300_000);

it(`archive restore --member of a snapshot of ${FILES} files`, async () => {
  const restored = await bounded(['archive', 'restore', made.archive, '--out', join(tempDir('wds-readers-restore-'), 'out'), '--member', 'M000100', '--member', 'M001999']);
  expect(restored.counts).toMatchObject({ ok: 20 });
}, 300_000);

it(`verify --report of a snapshot of ${FILES} files, in a heap of ${VERIFY_HEAP_MB} MB`, async () => {
  const report = join(tempDir('wds-readers-verify-'), 'verify.json');
  const verified = await bounded(['verify', join(made.archive, 'snapshots', made.ids[1]), '--report', report], 0, VERIFY_HEAP_MB);
  expect(verified.counts).toEqual({ ok: FILES, problem: 0 });
  const written = JSON.parse(await readFile(report, 'utf8')) as { files: number; items: { path: string; outcome: string }[] };
  expect(written.files).toBe(FILES);
  expect(written.items).toHaveLength(FILES);
  expect(written.items.every((i) => i.outcome === 'ok')).toBe(true);
}, 300_000);

it(`archive restore of a snapshot of ${FILES} files to a zip, and verify of the zip`, async () => {
  const zip = join(tempDir('wds-readers-zip-'), 'latest.zip');
  const restored = await bounded(['archive', 'restore', made.archive, '--out', zip]);
  expect(restored.counts).toMatchObject({ ok: FILES });
  const verified = await bounded(['verify', zip]);
  expect(verified.counts).toEqual({ ok: FILES, problem: 0 });
  // The older snapshot into that zip would mix with the files it holds that the older one does not.
  const mixed = await bounded(['archive', 'restore', made.archive, 'latest~1', '--out', zip], 2);
  expect(mixed.error).toMatch(new RegExp(`already holds files that snapshot ${made.ids[0]} does not \\(.*and ${made.added - 3} more\\)`));
}, 300_000);

it(`archive copy of two snapshots of ${FILES} files to a new folder, and again`, async () => {
  const copy = join(tempDir('wds-readers-copy-'), 'copy');
  const distinct = FILES + made.changed + made.added;
  const first = await bounded(['archive', 'copy', made.archive, copy]);
  expect(first).toMatchObject({ copied: made.ids, present: [], sent: { files: distinct }, reused: 2 * FILES - distinct, latest: made.ids[1] });
  // The second snapshot's unchanged files are links to the first's, as in the source.
  const unchanged = 'attachments/1/2/M001000/f0.pdf';
  expect((await stat(join(copy, 'snapshots', made.ids[1], unchanged))).ino).toBe((await stat(join(copy, 'snapshots', made.ids[0], unchanged))).ino);
  const again = await bounded(['archive', 'copy', made.archive, copy]);
  expect(again).toMatchObject({ copied: [], present: made.ids, sent: { files: 0 }, reused: 0 });
}, 300_000);

it(`an import source of a snapshot of ${FILES} files opens, and says what it holds, in a ${HEAP_LIMIT_MB} MB heap`, async () => {
  // An import of photos from a snapshot of attachments: the manifest counted by kind, nothing read.
  const module = pathToFileURL(join(CLI_BUILD, 'sources', 'export-tree.js')).href;
  const script = `const { ExportFolderSource } = await import(${JSON.stringify(module)});
const source = await ExportFolderSource.open(process.argv[1]);
try { for await (const e of source.entries({ kind: 'photo' })) console.log(e.kind); } catch (error) { console.log(error.message); }
await source.close();`;
  const run = await promisify(execFile)(process.execPath, [`--max-old-space-size=${HEAP_LIMIT_MB}`, '--input-type=module', '-e', script, join(made.archive, 'snapshots', made.ids[1])]);
  expect(run.stdout).toContain(`the export holds no photos (its manifest.jsonl lists ${FILES} attachments of sheet 1 field 2)`);
}, 300_000);
