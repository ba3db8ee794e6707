/**
 * `archive copy` of folder archives, as a user runs it (the bucket's copies are in
 * bucket/bucket-commands.test.ts): two files of one snapshot with the same bytes are written once
 * and linked. Before, the second was linked from where the first would be once the snapshot was
 * complete, which did not exist yet, and the copy failed (ENOENT).
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { makeSyntheticArchive } from '../helpers/synthetic-archive.js';

it('copies a snapshot in which two files have the same bytes, linking the second to the first', async () => {
  const made = await makeSyntheticArchive(join(tempDir('wds-copy-'), 'archive'), 100);
  // f1 of the first member given f0's bytes, in the first snapshot and its manifest.
  const first = join(made.archive, 'snapshots', made.ids[0]);
  const [f0, f1] = ['f0', 'f1'].map((name) => `attachments/1/2/M000000/${name}.pdf`) as [string, string];
  await writeFile(join(first, f1), await readFile(join(first, f0)));
  const texts = (await readFile(join(first, 'manifest.jsonl'), 'utf8')).split('\n');
  const twin = JSON.parse(texts.find((text) => text.includes(`"path":"${f0}"`))!) as { sha256: string; size: number };
  const edited = texts.map((text) => (text.includes(`"path":"${f1}"`) ? JSON.stringify({ ...JSON.parse(text), sha256: twin.sha256, size: twin.size }) : text));
  await writeFile(join(first, 'manifest.jsonl'), edited.join('\n'));

  const copy = join(tempDir('wds-copy-'), 'copy');
  const run = await runCli(['archive', 'copy', made.archive, copy, '--json']);
  expect(run.code, run.stderr).toBe(0);
  // The first snapshot's 99 distinct files and the second's changed and added one, the rest linked.
  expect(JSON.parse(run.stdout)).toMatchObject({ copied: made.ids, sent: { files: 99 + made.changed + made.added }, reused: 1 + 100 - made.changed - made.added });
  const copied = join(copy, 'snapshots', made.ids[0]);
  expect((await stat(join(copied, f1))).ino).toBe((await stat(join(copied, f0))).ino);
  const check = await runCli(['archive', 'check', copy]);
  expect(check.code, check.stdout + check.stderr).toBe(0);
});
