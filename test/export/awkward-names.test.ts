/**
 * The export tree and manifest follow DESIGN.md section 4 for awkward names: file names and member
 * codes with `/`, `\`, `..`, control characters, Windows-reserved names, trailing dots and spaces,
 * names too long for a file system, Japanese text (also decomposed, as macOS writes it), case-only
 * differences, names that become equal once made safe, and two records of one member with the same
 * file name. The service may refuse some of these on upload, so they are arranged directly in the
 * emulator. Every file lands on its own safe path, the manifest keeps the original name, and
 * verify passes, in a folder and in a zip.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { addMember, addSheet, companyOf, field, jpeg, setPhoto } from '../helpers/fixtures.js';
import { expectMatchesState, state, tempDir, type ExportContents } from '../helpers/export.js';
import { runExport } from '../../src/pipelines/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import type { SheetRecord } from '../../src/emulator/model.js';
import type { WdsClient } from '../../src/index.js';

const emu = useEmulator();
const SHEET = 7;
const FILE_FIELD = 7002;
const LONG_ASCII = `${'x'.repeat(300)}`;
const JAPANESE = '見積書';

/**
 * File names of member M1's records, in record order; null is a record without a file. A name of
 * only `.` or `..` is left out: it has no extension the service accepts (api-v2.md 4.4), and no
 * URL whose last segment is that name survives a URL parser (WHATWG URL drops dot segments, even
 * percent-encoded), so no client could download it. `..` is still a member code below.
 */
const M1_FILES: (string | null)[] = [
  'a/b.pdf',
  'a\\b.pdf',
  'a_b.pdf',
  'a:b.pdf',
  '../../escape.txt',
  '...pdf',
  null,
  'ctrl\u0001\u0007\ttab\nnewline\u007f.txt',
  'CON.txt',
  'nul.pdf',
  'com1.csv',
  'Lpt3',
  'trailing dot.',
  'trailing space.pdf ',
  '. . .',
  `${LONG_ASCII}-first.pdf`,
  `${LONG_ASCII}-second.pdf`,
  `${JAPANESE.repeat(100)}.pdf`,
  `${JAPANESE}.pdf`,
  'ガイド.pdf'.normalize('NFC'),
  'ガイド.pdf'.normalize('NFD'),
  'Report.pdf',
  'report.pdf',
  'REPORT.PDF',
  'same.pdf',
  'same.pdf',
];
/** Members whose codes are awkward too, each with one attachment and a photo. */
const CODES = ['CON', 'a1', 'A1', '../up', '..', 'tab\tcode', 'x/y', 'x_y', '社員001'];

const WINDOWS_RESERVED = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$/i;
// eslint-disable-next-line no-control-regex
const FORBIDDEN = /[\u0000-\u001f\u007f<>:"/\\|?*]/;

function expectSafeSegment(segment: string, path: string): void {
  expect(segment, path).not.toBe('');
  expect(['.', '..'], path).not.toContain(segment);
  expect(FORBIDDEN.test(segment), `${JSON.stringify(path)}: forbidden character`).toBe(false);
  expect(WINDOWS_RESERVED.test(segment), `${path}: a name Windows reserves`).toBe(false);
  expect(/[. ]$/.test(segment), `${path}: trailing dot or space`).toBe(false);
  expect(Buffer.byteLength(segment), `${path}: at most 255 bytes`).toBeLessThanOrEqual(255);
  expect(segment.normalize('NFC'), path).toBe(segment);
}

/** Every path is safe, of the layout's shape, and unique also where case does not count. */
function expectSafeTree(contents: ExportContents): void {
  const seen = new Set<string>();
  for (const line of contents.manifest) {
    const segments = line.path.split('/');
    if (line.kind === 'photo') {
      expect(segments.length, line.path).toBe(2);
      expect(segments[0]).toBe('photos');
    } else {
      expect(segments.length, line.path).toBe(5);
      expect(segments.slice(0, 3)).toEqual(['attachments', String(line.sheet_id), String(line.custom_field_id)]);
    }
    for (const segment of segments) expectSafeSegment(segment, line.path);
    const folded = line.path.toLowerCase();
    expect(seen.has(folded), `${line.path} is used twice (ignoring case)`).toBe(false);
    seen.add(folded);
  }
}

let client: WdsClient | undefined;
beforeAll(async () => {
  client = clientFor(emu());
  const company = companyOf(emu());
  addSheet(emu(), {
    id: SHEET, name: 'Documents', record_type: 1,
    fields: [field(7001, 'Title', 'text_box'), field(FILE_FIELD, 'File', 'attach_file')],
  });
  const records: Record<string, SheetRecord[]> = {};
  addMember(emu(), 'M1');
  records.M1 = M1_FILES.map((name, i): SheetRecord => {
    const files: SheetRecord['files'] = {};
    if (name !== null) files[FILE_FIELD] = company.storeFile(Buffer.from(`M1 record ${i}: ${name}`), name);
    return { values: { 7001: [`record ${i}`] }, files };
  });
  for (const [i, code] of CODES.entries()) {
    addMember(emu(), code);
    setPhoto(emu(), code, await jpeg(16, 16, i + 1));
    records[code] = [{ values: {}, files: { [FILE_FIELD]: company.storeFile(Buffer.from(`${code}'s file`), 'same.pdf') } }];
  }
  company.data.sheets[String(SHEET)]!.records = records;
});
afterAll(async () => {
  await client?.close();
});

describe.each(['folder', 'zip'] as const)('to a %s', (kind) => {
  it.each(['photos', 'attachments'] as const)('%s land on safe, distinct paths; the manifest keeps the names; verify passes', async (what) => {
    const dir = tempDir();
    const out = join(dir, kind === 'zip' ? `${what}.zip` : what);
    const result = await runExport({ client: client!, what, out, concurrency: 4 });
    expect(result.report.problems, JSON.stringify(result.report.items.filter((i) => i.outcome !== 'ok'))).toBe(0);
    const s = await state(emu());
    const contents = await expectMatchesState(out, s, what);
    expect(contents.manifest.length).toBe(what === 'photos' ? CODES.length : M1_FILES.filter((n) => n !== null).length + CODES.length);
    expectSafeTree(contents);
    // Nothing was written beside the export: no name escaped it.
    expect(readdirSync(dir)).toEqual([kind === 'zip' ? `${what}.zip` : what]);
    const verified = await verifyExport(out);
    expect(verified.problems).toEqual([]);
    expect(verified.ok).toBe(contents.manifest.length);

    if (kind === 'folder') {
      // A rerun finds every file intact under its safe name and downloads nothing.
      await emu().control('POST', '/stats/reset');
      const again = await runExport({ client: client!, what, out, concurrency: 4 });
      expect(again.report.counts.skipped).toBe(contents.manifest.length);
      expect((await emu().control('GET', '/stats')).storage_downloads).toBe(0);
      expect((await expectMatchesState(out, s, what)).manifest).toEqual(contents.manifest);
    }

    if (what === 'attachments') {
      // The two records of M1 named `same.pdf` keep their record index and get two paths.
      const same = contents.manifest.filter((l) => l.code === 'M1' && l.file_name === 'same.pdf');
      expect(same.map((l) => l.record_index)).toEqual([M1_FILES.indexOf('same.pdf') - 1, M1_FILES.lastIndexOf('same.pdf') - 1]);
      expect(new Set(same.map((l) => l.path)).size).toBe(2);
      // Names that are already safe are kept as they are.
      const plain = contents.manifest.find((l) => l.code === 'M1' && l.file_name === `${JAPANESE}.pdf`);
      expect(plain?.path).toBe(`attachments/${SHEET}/${FILE_FIELD}/M1/${JAPANESE}.pdf`);
      // A long name keeps its extension.
      const long = contents.manifest.filter((l) => l.file_name.startsWith(LONG_ASCII) || l.file_name.startsWith(JAPANESE.repeat(2)));
      expect(long).toHaveLength(3);
      for (const l of long) expect(l.path.endsWith('.pdf'), l.path).toBe(true);
    }
  });
});
