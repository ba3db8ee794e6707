/**
 * `archive diff` reads the two manifests side by side as a merge of sorted lists, keeping only
 * what differs; a manifest out of the order wds-files writes (edited by hand) is sorted through
 * temporary files first, with the same answer.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { diffSnapshots } from '../../src/archive/diff.js';
import { formatLine, manifestChunks, sortLines, type ManifestLine } from '../../src/sinks/manifest.js';

const made: string[] = [];
afterEach(async () => {
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
});

const attachment = (code: string, record: number, sha: string, extra: Partial<ManifestLine> = {}): ManifestLine => ({
  kind: 'attachment', code, sheet_id: 1, custom_field_id: 10, record_index: record, file_name: `r${record}.pdf`,
  path: `attachments/1/10/${code}/r${record}.pdf`, size: 100, sha256: sha.repeat(64), updated_at: '2026-04-01 10:00:00', ...extra,
});
const photo = (code: string, sha: string): ManifestLine => ({
  kind: 'photo', code, sheet_id: null, custom_field_id: null, record_index: null, file_name: `${code}.jpg`,
  path: `photos/${code}.jpg`, size: 50, sha256: sha.repeat(64), updated_at: '2026-04-01 10:00:00',
});

/** An archive of two snapshots with these manifests; `scramble` writes the second out of order. */
async function archiveOf(a: ManifestLine[], b: ManifestLine[], scramble = false): Promise<string> {
  const archive = await mkdtemp(join(tmpdir(), 'archive-diff-'));
  made.push(archive);
  for (const [id, lines] of [['2026-11-24T040000', sortLines(a)], ['2026-11-25T040000', scramble ? sortLines(b).reverse() : sortLines(b)]] as const) {
    await mkdir(join(archive, 'snapshots', id), { recursive: true });
    await writeFile(join(archive, 'snapshots', id, 'manifest.jsonl'), scramble ? lines.map(formatLine).join('') : Buffer.concat([...manifestChunks(lines)]));
  }
  return archive;
}

describe('archive diff of two snapshots', () => {
  const before = [photo('G1', 'a'), photo('G2', 'b'), attachment('G1', 0, 'c'), attachment('G1', 1, 'd'), attachment('G3', 0, 'e')];
  const after = [photo('G1', 'a'), photo('G4', 'f'), attachment('G1', 0, 'c'), attachment('G1', 1, '9', { size: 120 }), attachment('G2', 0, '8')];
  const expected = {
    from: '2026-11-24T040000', to: '2026-11-25T040000',
    counts: { added: 2, changed: 1, deleted: 2 },
    members: [
      { code: 'G1', files: [{ change: 'changed', line: after[3] }] },
      { code: 'G2', files: [{ change: 'deleted', line: before[1] }, { change: 'added', line: after[4] }] },
      { code: 'G3', files: [{ change: 'deleted', line: before[4] }] },
      { code: 'G4', files: [{ change: 'added', line: after[1] }] },
    ],
  };

  it.each([['in the order wds-files writes', false], ['one written out of order', true]])('names what was added, changed and deleted, by member, in manifest order (%s)', async (_, scramble) => {
    const archive = await archiveOf(before, after, scramble);
    expect(await diffSnapshots(archive, '2026-11-24T040000', '@2026-11-25T040000')).toEqual(expected);
  });

  it('of many files reads both manifests whole: the first and the last files differ', async () => {
    const many = (sha: string) => Array.from({ length: 5000 }, (_, i) => attachment(`G${String(i).padStart(5, '0')}`, 0, i === 0 || i === 4999 ? sha : 'a'));
    const archive = await archiveOf(many('b'), many('c'));
    const diff = await diffSnapshots(archive, '2026-11-24T040000', '2026-11-25T040000');
    expect(diff.counts).toEqual({ added: 0, changed: 2, deleted: 0 });
    expect(diff.members.map((m) => m.code)).toEqual(['G00000', 'G04999']);
  });
});
