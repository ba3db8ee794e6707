/**
 * The order of manifest lines: photos by code, then attachments by sheet, field, code and record.
 * Codes and names compare by UTF-16 code unit, so the same files give the same manifest on every
 * machine, whatever its locale (`localeCompare` put `a` before `B` and `é` before `Z` here).
 */
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatLine, manifestChunks, manifestKey, sortLines, type ManifestLine } from '../../src/sinks/manifest.js';
import { writeSortedManifest } from '../../src/sinks/manifest-sort.js';

const line = (kind: 'photo' | 'attachment', code: string, extra: Partial<ManifestLine> = {}): ManifestLine => ({
  kind, code, sheet_id: kind === 'photo' ? null : 1, custom_field_id: kind === 'photo' ? null : 10, record_index: kind === 'photo' ? null : 0,
  file_name: 'f.pdf', path: `${kind}/${code}`, size: 1, sha256: '0'.repeat(64), updated_at: '2026-04-01 10:00:00', ...extra,
});

describe('manifest order', () => {
  it('photos first by code, then attachments by sheet, field, code, record and name, by code unit', () => {
    const lines = [
      line('attachment', 'a', { sheet_id: 2 }),
      line('attachment', 'b', { record_index: 1 }),
      line('attachment', 'b', { record_index: 0, file_name: 'z.pdf' }),
      line('attachment', 'b', { record_index: 0, file_name: 'Z.pdf' }),
      line('attachment', 'a', { custom_field_id: 11 }),
      line('photo', 'é'),
      line('photo', 'b'),
      line('photo', 'Z'),
      line('photo', 'a'),
      line('photo', 'B'),
      line('photo', '10'),
      line('photo', '9'),
    ];
    const order = sortLines(lines).map((l) => `${l.kind} ${l.sheet_id ?? ''}/${l.custom_field_id ?? ''} ${l.code} ${l.record_index ?? ''} ${l.kind === 'attachment' ? l.file_name : ''}`.trim());
    expect(order).toEqual([
      'photo / 10',
      'photo / 9',
      'photo / B',
      'photo / Z',
      'photo / a',
      'photo / b',
      'photo / é',
      'attachment 1/10 b 0 Z.pdf',
      'attachment 1/10 b 0 z.pdf',
      'attachment 1/10 b 1 f.pdf',
      'attachment 1/11 a 0 f.pdf',
      'attachment 2/10 a 0 f.pdf',
    ]);
  });
});

describe('the final manifest of a folder, sorted from the lines appended', () => {
  // 64 lines a run: the 702 lines are sorted in eleven runs on disk and merged, a file's later line in a later run.
  it.each([['in memory', undefined], ['through runs on disk', 64]])('is the sorted manifest of the last line of each file, byte for byte, without a cut tail (%s)', async (_, linesPerRun) => {
    const dir = await mkdtemp(join(tmpdir(), 'manifest-sort-'));
    try {
      const appended: ManifestLine[] = [];
      for (let i = 0; i < 700; i += 1) {
        const code = `M${(i * 7919) % 700}`;
        appended.push(i % 3 === 0 ? line('photo', code, { path: `photos/${code}.jpg` }) : line('attachment', code, { record_index: i % 2, file_name: `f ${i % 5} ✓.pdf` }));
      }
      // Files downloaded again (changed on the service): the later line is the one that counts.
      appended.push(line('photo', 'M0', { path: 'photos/M0.png', size: 2 }), line('attachment', 'M1', { record_index: 1, file_name: 'f 1 ✓.pdf', size: 3 }));
      const from = join(dir, 'appended.jsonl');
      await writeFile(from, `${appended.map(formatLine).join('')}{"kind":"photo","code":"cut`);
      const given: ManifestLine[] = [];
      await writeSortedManifest(from, join(dir, 'sorted.jsonl'), (l) => given.push(l), undefined, linesPerRun);
      const last = new Map(appended.map((l) => [manifestKey(l), l]));
      const expected = Buffer.concat([...manifestChunks(sortLines(last.values()))]);
      const written = await readFile(join(dir, 'sorted.jsonl'));
      expect(written.equals(expected)).toBe(true);
      // Each line of the final manifest is given once, in its order; the runs are gone.
      expect(given).toEqual(sortLines(last.values()));
      expect((await readdir(dir)).sort()).toEqual(['appended.jsonl', 'sorted.jsonl']);
      expect(written.toString().split('\n')).toHaveLength(last.size + 1);
      expect(written.toString()).toContain('"path":"photos/M0.png","size":2');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('names the manifest and the line when a whole line in it does not parse', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'manifest-sort-'));
    try {
      const from = join(dir, 'appended.jsonl');
      await writeFile(from, `${formatLine(line('photo', 'a'))}\n{"kind":"photo",garbage\n${formatLine(line('photo', 'b'))}`);
      await expect(writeSortedManifest(from, join(dir, 'sorted.jsonl'))).rejects.toThrow(`${from}, line 3: not a manifest line`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
