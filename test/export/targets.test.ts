/**
 * `--sheet` and `--field` (issue 4): an export of one sheet or one file part holds exactly those
 * files; a sheet that does not exist, or a field that is not a file part of the sheet, is a usage
 * error naming what there is (exit 2), and nothing is written: no folder is made, a folder that
 * was there keeps what it had, and an earlier export there keeps its manifest.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { readExport, state, tempDir } from '../helpers/export.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { runExport } from '../../src/pipelines/export.js';
import { UnknownTargetError } from '../../src/stages/export/list-urls.js';

const emu = useEmulator({
  generate: { members: 20, photo_bytes: [10_000, 12_000], attachments_per_member: [2, 3], attachment_bytes: [3_000, 6_000] },
});
const api = useClient(emu);

it('one sheet, and one file part of it: exactly their files', async () => {
  const s = await state(emu());
  const sheets = [...new Set(s.attachments.map((a) => a.sheet_id))];
  expect(sheets.length).toBeGreaterThan(1);
  const sheet = sheets[0]!;
  const out = join(tempDir(), 'one-sheet');
  await runExport({ client: api(), what: 'attachments', out, sheet, concurrency: 4 });
  const contents = await readExport(out);
  const expected = s.attachments.filter((a) => a.sheet_id === sheet);
  expect(contents.manifest.length).toBe(expected.length);
  expect(new Set(contents.manifest.map((l) => l.sheet_id))).toEqual(new Set([sheet]));

  const field = expected[0]!.custom_field_id;
  const onePart = join(tempDir(), 'one-part');
  await runExport({ client: api(), what: 'attachments', out: onePart, sheet, field, concurrency: 4 });
  expect((await readExport(onePart)).manifest.length).toBe(expected.filter((a) => a.custom_field_id === field).length);
});

it('a sheet that does not exist, or a field that is not a file part, is refused naming what there is', async () => {
  const layouts = await api().sheets.layouts();
  const withFile = layouts.find((l) => l.custom_fields.some((f) => f.type_detail === 'attach_file'))!;
  const notFile = withFile.custom_fields.find((f) => f.type_detail !== 'attach_file')!;
  const out = join(tempDir(), 'nothing');
  await expect(runExport({ client: api(), what: 'attachments', out, sheet: 9999 })).rejects.toThrow(UnknownTargetError);
  await expect(runExport({ client: api(), what: 'attachments', out, sheet: 9999 })).rejects.toThrow(new RegExp(`there is no sheet 9999; sheets with file parts: .*${withFile.id} \\(`));
  await expect(runExport({ client: api(), what: 'attachments', out, sheet: withFile.id, field: notFile.id }))
    .rejects.toThrow(new RegExp(`field ${notFile.id} is not a file part of sheet ${withFile.id}.*its file parts: \\d+ \\(`));
  expect(existsSync(out)).toBe(false);
  // Nor a folder made for a zip; and a folder that was there keeps what it had.
  const zipIn = join(tempDir(), 'new', 'deeper');
  await expect(runExport({ client: api(), what: 'attachments', out: join(zipIn, 'a.zip'), sheet: 9999 })).rejects.toThrow(UnknownTargetError);
  expect(existsSync(join(zipIn, '..'))).toBe(false);
  const earlier = join(tempDir(), 'earlier');
  mkdirSync(earlier);
  writeFileSync(join(earlier, 'notes.txt'), 'kept');
  // (force: a folder of other files is refused before any listing without it; see sdk-target.test.ts)
  await expect(runExport({ client: api(), what: 'attachments', out: earlier, sheet: 9999, force: true })).rejects.toThrow(UnknownTargetError);
  expect(readdirSync(earlier)).toEqual(['notes.txt']);
  // An earlier export, one of its files since changed by hand: a run that cannot list leaves its
  // manifest as it was (checking and rewriting it waits for a listing).
  const exported = join(tempDir(), 'exported');
  await runExport({ client: api(), what: 'attachments', out: exported, concurrency: 4 });
  const manifest = readFileSync(join(exported, 'manifest.jsonl'), 'utf8');
  const edited = join(exported, (JSON.parse(manifest.split('\n')[1]!) as { path: string }).path);
  writeFileSync(edited, 'changed by hand');
  await expect(runExport({ client: api(), what: 'attachments', out: exported, sheet: 9999 })).rejects.toThrow(UnknownTargetError);
  expect(readFileSync(join(exported, 'manifest.jsonl'), 'utf8')).toBe(manifest);
  expect(readFileSync(edited, 'utf8')).toBe('changed by hand');

  const run = await runCli(['attachments', 'export', '--out', out, '--sheet', '9999', ...connectionArgs(emu())]);
  expect(run.code).toBe(2);
  expect(run.stderr).toContain('there is no sheet 9999');
  expect(existsSync(out)).toBe(false);
});

it('a zip named through a link is the zip it points to: made and updated there, the link kept', async () => {
  const nas = join(tempDir(), 'nas');
  mkdirSync(nas);
  const real = join(nas, 'real.zip');
  const link = join(tempDir(), 'link.zip');
  symlinkSync(real, link);
  const run = await runCli(['photos', 'export', '--out', link, ...connectionArgs(emu())]);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toContain(`written to ${real}`);
  expect(lstatSync(link).isSymbolicLink()).toBe(true);
  expect(readdirSync(nas)).toEqual(['real.zip']);
  expect((await readExport(real)).manifest.length).toBe((await state(emu())).members.filter((m) => m.photo).length);
  // The SDK follows it too.
  const again = await runExport({ client: api(), what: 'photos', out: link });
  expect(again.out).toBe(real);
  expect(lstatSync(link).isSymbolicLink()).toBe(true);
});
