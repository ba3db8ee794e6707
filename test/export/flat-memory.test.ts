/**
 * An export's memory does not grow with its files (issue 46): the real CLI exports 50,000 small
 * attachments, to a folder and to a zip, with its old generation held to HEAP_LIMIT_MB. The CLI
 * needs 12 to 16 MB of it for 2,000 files, so per-file state of more than about 200 bytes a file
 * runs out of heap here long before the end: an export that held every listed file (the listing's
 * text and objects, a job and a URL per file), a zip that held a manifest line and archiver's
 * entry object per file to the end, or a folder export that held every path it gave out and every
 * folder it made (the CLI before issue 46 died under this limit at 50,000 files, to a folder and
 * to a zip, and at 64 MB before its listing was streamed). Without such state it finishes.
 *
 * The service clock runs 60 times as fast, so the download URLs expire every 15 real seconds and
 * each export lists its files again several times: a listing asked for again that held every file
 * with its URL (about 700 bytes a file) runs out of heap here too.
 *
 * Each export is then run again into what it made, as a nightly export to the same place runs,
 * every file kept: a rerun that held the earlier run's manifest as a map of its lines, or a zip's
 * entries as yauzl's objects (about 660 bytes each), or the kept lines in an array, ran out of heap
 * here (checked once for the folder and the zip, before issue 46's rerun slice).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { readZipExport, tempDir } from '../helpers/export.js';

const MEMBERS = 25_000;
const FILES = 2 * MEMBERS;
/** Old-generation limit of the CLI (--max-old-space-size), MB. */
const HEAP_LIMIT_MB = 24;

const emu = useEmulator({
  generate: { members: MEMBERS, photo_ratio: 0, attachments_per_member: [2, 2], attachment_bytes: [2048, 2048] },
  maintenance: false,
  clockSpeed: 60,
});

async function exportWithLimit(out: string): Promise<void> {
  const run = await runCli(['attachments', 'export', '-o', out, ...connectionArgs(emu())], { NODE_OPTIONS: `--max-old-space-size=${HEAP_LIMIT_MB}` });
  expect(run.stderr).not.toContain('heap out of memory');
  expect(run.code, run.stderr.slice(-2000)).toBe(0);
  expect(run.stdout).toMatch(/attachments export: 50,?000 ok/);
  expect(run.stdout).toMatch(/download URLs expired: listed again \d+ times/);
  // Into the same place again: nothing to download, every file kept.
  const again = await runCli(['attachments', 'export', '-o', out, ...connectionArgs(emu())], { NODE_OPTIONS: `--max-old-space-size=${HEAP_LIMIT_MB}` });
  expect(again.stderr).not.toContain('heap out of memory');
  expect(again.code, again.stderr.slice(-2000)).toBe(0);
  expect(again.stdout).toMatch(/attachments export: 0 ok, 50,?000 skipped;/);
}

// Neither bounds anything but a CLI that never ends: 50,000 downloads on a loaded machine take minutes.
it(`exports ${FILES} attachments to a folder, and again into it, with a heap of ${HEAP_LIMIT_MB} MB`, async () => {
  const out = join(tempDir(), 'out');
  await exportWithLimit(out);
  const lines = (await readFile(join(out, 'manifest.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { kind: string; size?: number });
  const files = lines.filter((l) => l.kind === 'attachment');
  expect(files).toHaveLength(FILES);
  expect(files.every((f) => f.size === 2048)).toBe(true);
}, 600_000);

it(`exports ${FILES} attachments to a zip, and again into it, with a heap of ${HEAP_LIMIT_MB} MB`, async () => {
  const out = join(tempDir(), 'out.zip');
  await exportWithLimit(out);
  const zip = await readZipExport(out);
  // Every entry the manifest names is in the central directory, whole, and the manifest is last.
  expect(zip.manifest).toHaveLength(FILES);
  expect(zip.files.size).toBe(FILES);
  expect(zip.order.at(-1)).toBe('manifest.jsonl');
  for (const line of zip.manifest) expect(zip.files.get(line.path), line.path).toMatchObject({ size: 2048, sha256: line.sha256 });
}, 600_000);
