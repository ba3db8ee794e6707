/**
 * An export as an import source holds photos, attachments, or both in one manifest (DESIGN.md
 * section 4): a photos import takes only its `kind: photo` lines and an attachments import only its
 * `kind: attachment` lines, passing the others over with a note; an export holding none of the kind
 * is an error naming it, and nothing is sent. An attachments import given a sheet and field takes
 * only the export's lines of that file part, the same way.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { state, tempDir } from '../helpers/export.js';
import { runExport } from '../../src/pipelines/export.js';
import { importPhotos, photoHashes, photoRequests } from './photo-helpers.js';
import { attachmentFacts, attachmentRequests, CONTRACT, importAttachments, QUALIFICATIONS } from './attachment-helpers.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10_000 } });
const api = useClient(emu, { limits: { update: { limit: 10_000, windowMs: 60_000 } } });
/** The sample company's qualification files (sheet 2) and contracts (sheet 1). */
const QUALS = 28;
const CONTRACTS = 27;
const PASSED_ATTACHMENTS = `passed over ${CONTRACTS} attachments of sheet 1 field 1204, ${QUALS} attachments of sheet 2 field 1306 of the export`;

/** The qualification files of sheet 2 alone, as `attachments export --sheet 2 --field 1306` writes them. */
async function qualifications(kind: 'folder' | 'zip'): Promise<string> {
  const out = join(tempDir('wds-kinds-'), kind === 'zip' ? 'quals.zip' : 'quals');
  const exported = await runExport({ client: api(), what: 'attachments', out, sheets: [QUALIFICATIONS.sheet], field: QUALIFICATIONS.field, concurrency: 4 });
  expect(exported.report.problems).toBe(0);
  return out;
}

/** Photos and then attachments exported into one folder: one manifest of both kinds. */
async function both(): Promise<{ out: string; photos: number; attachments: number }> {
  const out = join(tempDir('wds-kinds-'), 'both');
  const photos = await runExport({ client: api(), what: 'photos', out, concurrency: 4 });
  const attachments = await runExport({ client: api(), what: 'attachments', out, concurrency: 4 });
  expect(photos.report.problems + attachments.report.problems).toBe(0);
  return { out, photos: photos.report.counts.ok, attachments: attachments.report.counts.ok };
}

describe('an export imported by the other kind of import', () => {
  it.each(['folder', 'zip'] as const)('photos import of an attachments export (%s): an error naming it; no attachment becomes a photo', async (kind) => {
    await emu().control('POST', '/reset');
    const out = await qualifications(kind);
    const before = await photoHashes(emu());
    const sent = await photoRequests(emu());
    // A0028's qualification is a JPEG, jlpt-n1.jpg: it would pass every check of a photo.
    await expect(importPhotos(api(), out)).rejects.toThrow(`${out}: the export holds no photos (its manifest.jsonl lists ${QUALS} attachments of sheet 2 field 1306)`);
    expect(await photoHashes(emu())).toEqual(before);
    expect(await photoRequests(emu())).toMatchObject({ register: sent.register, update: sent.update });
  });

  it('photos import of a folder holding both: every photo and nothing else, the attachments passed over in a note', async () => {
    await emu().control('POST', '/reset');
    const { out, photos, attachments } = await both();
    const before = await photoHashes(emu());
    const result = await importPhotos(api(), out);
    expect(result.report.counts).toMatchObject({ ok: photos, conflict: 0, invalid: 0, failed: 0 });
    expect(result.report.items.every((i) => (i.path ?? '').startsWith(join(out, 'photos')))).toBe(true);
    expect(attachments).toBe(CONTRACTS + QUALS);
    expect(result.report.notes).toContain(`${out}: ${PASSED_ATTACHMENTS}; this import takes its photos`);
    // The same bytes went back: every member keeps their own photo.
    expect(await photoHashes(emu())).toEqual(before);
  });

  it('attachments import of a folder holding both: every attachment and no photo', async () => {
    await emu().control('POST', '/reset');
    const { out, photos } = await both();
    const before = await attachmentFacts(emu());
    const sent = await photoRequests(emu());
    const result = await importAttachments(api(), out);
    expect(result.report.items.some((i) => (i.path ?? '').startsWith(join(out, 'photos')))).toBe(false);
    expect(result.report.counts).toMatchObject({ conflict: 0, invalid: 0, failed: 0 });
    expect(result.report.notes).toContain(`${out}: passed over ${photos} photos of the export; this import takes its attachments`);
    expect(await attachmentFacts(emu())).toEqual(before);
    expect(await photoRequests(emu())).toMatchObject({ register: sent.register, update: sent.update });
    expect((await attachmentRequests(emu())).register).toBe(0);
  });

  it('on the command line: the note in the summary, and the error with exit 1', async () => {
    await emu().control('POST', '/reset');
    const { out } = await both();
    const dry = await runCli(['photos', 'import', out, '--dry-run', ...connectionArgs(emu())]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`  ${out}: ${PASSED_ATTACHMENTS}; this import takes its photos\n`);
    const quals = await qualifications('folder');
    const refused = await runCli(['photos', 'import', quals, ...connectionArgs(emu())]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${quals}: the export holds no photos`);
  });
});

describe('an attachments export imported with --sheet and --field', () => {
  /** `updated_at` of each file of one sheet, by code, record and name. */
  const storedAt = async (sheet: number): Promise<Map<string, string>> =>
    new Map((await state(emu())).attachments.filter((a) => a.sheet_id === sheet).map((a) => [`${a.code}:${a.record_index}:${a.file_name}`, a.updated_at]));

  it('restores only that sheet and file part; the other files are passed over in a note', async () => {
    await emu().control('POST', '/reset');
    const out = join(tempDir('wds-kinds-'), 'attachments');
    await runExport({ client: api(), what: 'attachments', out, concurrency: 4 });
    const contracts = await storedAt(CONTRACT.sheet);
    const quals = await storedAt(QUALIFICATIONS.sheet);
    const result = await importAttachments(api(), out, { sheet: QUALIFICATIONS.sheet, field: QUALIFICATIONS.field });
    expect(result.report.counts).toMatchObject({ conflict: 0, invalid: 0, failed: 0 });
    expect(result.report.items).toHaveLength(QUALS);
    expect(result.report.items.every((i) => (i.path ?? '').startsWith(join(out, 'attachments', '2', '1306')))).toBe(true);
    expect(result.report.notes).toContain(`${out}: passed over ${CONTRACTS} attachments of sheet 1 field 1204 of the export; this import takes its attachments of sheet 2 field 1306`);
    // No contract was sent again; the qualifications that went were replaced.
    expect(await storedAt(CONTRACT.sheet)).toEqual(contracts);
    const after = await storedAt(QUALIFICATIONS.sheet);
    expect([...after].filter(([key, at]) => quals.get(key) !== at)).toHaveLength(result.report.counts.ok);
    expect(result.report.counts.ok).toBeGreaterThan(0);
  });

  it('an export holding no file of that sheet and field is an error naming it; nothing is sent', async () => {
    await emu().control('POST', '/reset');
    const out = await qualifications('zip');
    const sent = await attachmentRequests(emu());
    await expect(importAttachments(api(), out, { sheet: CONTRACT.sheet, field: CONTRACT.field }))
      .rejects.toThrow(`${out}: the export holds no attachments of sheet 1 field 1204 (its manifest.jsonl lists ${QUALS} attachments of sheet 2 field 1306)`);
    expect(await attachmentRequests(emu())).toEqual(sent);
  });
});
