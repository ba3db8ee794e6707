/**
 * A rerun after a record of a multiple-record sheet was deleted. An attachment's manifest line
 * holds its record_index, and deleting a member's first record moves the member's later files one
 * index down (api-v2.md 4.4 Sheets 4: a partial update replaces the member's records whole). The
 * rerun of a folder or zip export must take those unchanged files as the ones it holds, not
 * download them again next to themselves (`b (2).pdf`, listed twice); the deleted record's file
 * stays (an export adds), and a file of the same name that now has its index neither overwrites
 * it nor hides its line. The snapshot archive links the moved files from the previous snapshot.
 * Every result verifies, and the export imports into a company without files.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { companyOf } from '../helpers/fixtures.js';
import { readExport, sha256, tempDir, type ExportContents } from '../helpers/export.js';
import { runExport } from '../../src/pipelines/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { QUALIFICATIONS, addRecordWithFile, importAttachments, pdf, recordsOf } from '../import/attachment-helpers.js';
import { archiveRun, resetStats, snapshotJson, storageDownloads } from '../archive/helpers.js';

const source = useEmulator({ generate: { members: 4, files: false } });
const target = useEmulator({ generate: { members: 4, files: false }, limits: { updatesPerMinute: 10000 } });
const api = useClient(source);
const importer = useClient(target, { limits: { update: { limit: 10000, windowMs: 60_000 } } });

/** The member whose first record is deleted through the API, and the files of its three records. */
const MEMBER = 'G000001';
const FIRST = { name: 'first.pdf', data: pdf(3100) };
const SECOND = { name: 'second.pdf', data: pdf(3200) };
const THIRD = { name: 'third.csv', data: Buffer.from('course,hours\nsafety,8\n') };
/** The member with two records of one name, different files: the first record is deleted. */
const TWINS = 'G000002';
const OLD_TWIN = pdf(4100);
const NEW_TWIN = pdf(4200);

/** Empties the file part in both companies (a reset would also end the tokens the clients hold). */
function emptyFilePart(): void {
  for (const emu of [source(), target()]) companyOf(emu).data.sheets[String(QUALIFICATIONS.sheet)]!.records = {};
}

beforeEach(async () => {
  emptyFilePart();
  for (const file of [FIRST, SECOND, THIRD]) addRecordWithFile(source(), QUALIFICATIONS, MEMBER, file.name, file.data);
  addRecordWithFile(source(), QUALIFICATIONS, TWINS, 'twin.pdf', OLD_TWIN);
  // The second file of that name is uploaded later: another updated_at (one-second resolution).
  await source().control('POST', '/clock', { advance_seconds: 60 });
  addRecordWithFile(source(), QUALIFICATIONS, TWINS, 'twin.pdf', NEW_TWIN);
});

/** Deletes MEMBER's first record as a user would: a partial update sending the records it keeps. */
async function deleteFirstRecord(): Promise<void> {
  const records = [SECOND, THIRD].map((file) => ({ custom_fields: [{ id: QUALIFICATIONS.field, values: [file.name] }] }));
  const { status, body } = await source().api('PATCH', `/sheets/${QUALIFICATIONS.sheet}`, { member_data: [{ member_code: MEMBER, records }] });
  expect(status).toBe(200);
  expect((await source().waitTask(body.task_id)).status).toBe('OK');
  expect((await recordsOf(source(), QUALIFICATIONS, MEMBER)).map((r) => [r.record_index, r.file_name])).toEqual([[0, SECOND.name], [1, THIRD.name]]);
}

/**
 * Deletes TWINS's first record in the emulator: the API cannot do it, for a partial update keeps
 * a file only when one old record holds its name (4.4 Sheets 10).
 */
function deleteFirstTwin(): void {
  const records = companyOf(source()).data.sheets[String(QUALIFICATIONS.sheet)]!.records;
  records[TWINS] = records[TWINS]!.slice(1);
}

/** MEMBER's or TWINS's manifest lines as `record_index file_name sha256`, in record order. */
function linesOf(contents: ExportContents, code: string): string[] {
  return contents.manifest.filter((l) => l.code === code).map((l) => `${l.record_index} ${l.file_name} ${l.sha256}`).sort();
}

/** Each file on disk once in the manifest, with the size and sha256 it has; no file it does not name (but a snapshot's own). */
function expectOneLinePerFile(contents: ExportContents): void {
  const paths = contents.manifest.map((l) => l.path);
  expect(new Set(paths).size, 'no path listed twice').toBe(paths.length);
  expect([...contents.files.keys()].filter((path) => path !== 'snapshot.json').sort()).toEqual([...paths].sort());
  for (const line of contents.manifest) expect(contents.files.get(line.path), line.path).toEqual(expect.objectContaining({ size: line.size, sha256: line.sha256 }));
}

describe.each(['folder', 'zip'] as const)('a rerun into a %s export after a record was deleted', (kind) => {
  const outIn = (): string => join(tempDir('wds-moved-'), kind === 'zip' ? 'attachments.zip' : 'attachments');

  it('downloads nothing again: the moved files keep their paths, listed once with their new record_index, and the deleted record\'s file stays', async () => {
    const out = outIn();
    expect((await runExport({ client: api(), what: 'attachments', out })).report.problems).toBe(0);
    const before = await readExport(out);
    await deleteFirstRecord();

    await resetStats(source());
    const rerun = await runExport({ client: api(), what: 'attachments', out });
    expect(rerun.report.problems).toBe(0);
    expect(await storageDownloads(source()), 'storage downloads of the rerun').toBe(0);

    const after = await readExport(out);
    expectOneLinePerFile(after);
    expect(linesOf(after, MEMBER)).toEqual([
      `0 ${FIRST.name} ${sha256(FIRST.data)}`, `0 ${SECOND.name} ${sha256(SECOND.data)}`, `1 ${THIRD.name} ${sha256(THIRD.data)}`,
    ]);
    // The same files at the same paths as before: nothing was written next to them.
    expect(after.manifest.map((l) => l.path).sort()).toEqual(before.manifest.map((l) => l.path).sort());
    expect((await verifyExport(out)).problems).toEqual([]);

    // Imported into a company without files: the member gets back its two records and the deleted one's file.
    const imported = await importAttachments(importer(), out, { sheet: QUALIFICATIONS.sheet, field: QUALIFICATIONS.field });
    expect(imported.report.items.filter((i) => i.code === MEMBER).map((i) => i.outcome)).toEqual(['ok', 'ok', 'ok']);
    expect((await recordsOf(target(), QUALIFICATIONS, MEMBER)).map((r) => r.sha256).sort()).toEqual([FIRST, SECOND, THIRD].map((f) => sha256(f.data)).sort());
  });

  it('keeps the deleted record\'s file when a file of the same name moves to its index, each under a line of its own', async () => {
    const out = outIn();
    await runExport({ client: api(), what: 'attachments', out });
    deleteFirstTwin();

    await resetStats(source());
    const rerun = await runExport({ client: api(), what: 'attachments', out });
    expect(rerun.report.problems).toBe(0);
    expect(await storageDownloads(source()), 'storage downloads of the rerun').toBe(0);

    const after = await readExport(out);
    expectOneLinePerFile(after);
    // The file the service has at index 0 now is the newer one; the older stays, after it.
    expect(linesOf(after, TWINS)).toEqual([`0 twin.pdf ${sha256(NEW_TWIN)}`, `1 twin.pdf ${sha256(OLD_TWIN)}`]);
    expect((await verifyExport(out)).problems).toEqual([]);
  });
});

describe('an archive run after a record was deleted', () => {
  it('links the moved files from the previous snapshot at their paths, with their new record_index, and counts them unchanged', async () => {
    const archive = join(tempDir('wds-moved-archive-'), 'attachments');
    const first = (await archiveRun(api(), archive)).snapshot!;
    await deleteFirstRecord();

    await resetStats(source());
    const second = (await archiveRun(api(), archive)).snapshot!;
    expect(await storageDownloads(source()), 'storage downloads of the second run').toBe(0);
    expect((await snapshotJson(second.path)).counts).toEqual({ files: 4, new: 0, changed: 0, unchanged: 4, repaired: 0, deleted: 1, failed: 0 });

    const before = await readExport(first.path);
    const after = await readExport(second.path);
    expectOneLinePerFile(after);
    // The archive follows deletions: the deleted record's file is not in the new snapshot.
    expect(linesOf(after, MEMBER)).toEqual([`0 ${SECOND.name} ${sha256(SECOND.data)}`, `1 ${THIRD.name} ${sha256(THIRD.data)}`]);
    for (const line of after.manifest.filter((l) => l.code === MEMBER)) {
      const earlier = before.manifest.find((l) => l.code === MEMBER && l.file_name === line.file_name)!;
      expect(line.path).toBe(earlier.path);
      expect((await stat(join(second.path, line.path))).ino, `${line.path} is a link to the previous snapshot's file`).toBe((await stat(join(first.path, earlier.path))).ino);
    }
    expect((await verifyExport(second.path)).problems).toEqual([]);
  });
});
