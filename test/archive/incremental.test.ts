/**
 * The snapshot archive (DESIGN.md section 10), run after run against a generated company: the
 * first snapshot is full; the second, with nothing changed, downloads nothing and every file is a
 * hard link to the first's; after 1 % of the files change and a member is deleted, the third
 * downloads exactly the changed files, the member's files are gone, and diff names both. Every
 * snapshot verifies, leaves the earlier ones intact, and imports into a company without files
 * byte for byte.
 */
import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { state, tempDir } from '../helpers/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { diffSnapshots } from '../../src/archive/diff.js';
import { attachmentFacts, factsOf, importAttachments, type AttachmentFacts } from '../import/attachment-helpers.js';
import { archiveRun, changeAttachments, deleteMember, fileId, inodesOf, manifestOf, resetStats, snapshotJson, storageDownloads } from './helpers.js';
import type { ExportResult } from '../../src/pipelines/export.js';

const MEMBERS = 150;
const GONE = 'G000007';
const source = useEmulator({ generate: { members: MEMBERS, photo_ratio: 0, attachments_per_member: [1, 3], attachment_bytes: [3000, 20_000] } });
const target = useEmulator({ generate: { members: MEMBERS, files: false }, limits: { updatesPerMinute: 10000 } });
const api = useClient(source);
const importer = useClient(target, { limits: { update: { limit: 10000, windowMs: 60_000 } } });

const archive = join(tempDir('wds-archive-'), 'attachments');
const runs: { result: ExportResult; facts: AttachmentFacts[]; downloads: number }[] = [];
let changed: string[] = [];

async function run(): Promise<void> {
  await resetStats(source());
  const result = await archiveRun(api(), archive);
  runs.push({ result, facts: factsOf((await state(source())).attachments), downloads: await storageDownloads(source()) });
}

beforeAll(async () => {
  await run();
  await run();
  const files = runs[0]!.result.snapshot!.counts.files;
  changed = await changeAttachments(source(), Math.ceil(files / 100), GONE);
  await deleteMember(source(), GONE);
  await run();
}, 60_000);

describe('three archive runs', () => {
  it('the first is full: every file downloaded, a complete snapshot named by latest', async () => {
    const { result, facts, downloads } = runs[0]!;
    const snap = result.snapshot!;
    expect(snap.complete).toBe(true);
    expect(snap.counts).toEqual({ files: facts.length, new: facts.length, changed: 0, unchanged: 0, repaired: 0, deleted: 0, failed: 0 });
    expect(downloads).toBe(facts.length);
    expect(snap.path).toBe(join(archive, 'snapshots', snap.id));
    const doc = await snapshotJson(snap.path);
    expect(doc).toMatchObject({ pipeline: 'test-archive', complete: true, previous: null, counts: snap.counts, bytes: snap.bytes, unchanged_files: 'hard links' });
    expect(snap.bytes.new).toBe(snap.bytes.total);
  });

  it('the second, with nothing changed, makes no storage request and every file shares an inode with the first', async () => {
    const [first, second] = [runs[0]!.result.snapshot!, runs[1]!.result.snapshot!];
    expect(runs[1]!.downloads).toBe(0);
    expect(second.id > first.id).toBe(true);
    expect(second.counts).toMatchObject({ files: first.counts.files, new: 0, changed: 0, unchanged: first.counts.files, deleted: 0, failed: 0 });
    expect(second.bytes).toEqual({ total: first.bytes.total, new: 0 });
    expect((await snapshotJson(second.path)).previous).toBe(first.id);
    const [a, b] = [await inodesOf(first.path), await inodesOf(second.path)];
    expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
    for (const [key, ino] of b) expect(ino, key).toBe(a.get(key));
  });

  it('the third downloads exactly the changed files; the deleted member is absent; unchanged files stay links', async () => {
    const [second, third] = [runs[1]!.result.snapshot!, runs[2]!.result.snapshot!];
    const before = await manifestOf(second.path);
    const after = await manifestOf(third.path);
    const goneFiles = [...before.values()].filter((l) => l.code === GONE);
    expect(goneFiles.length).toBeGreaterThan(0);
    expect(runs[2]!.downloads).toBe(changed.length);
    expect(third.counts).toEqual({
      files: before.size - goneFiles.length, new: 0, changed: changed.length, unchanged: before.size - goneFiles.length - changed.length, repaired: 0, deleted: goneFiles.length, failed: 0,
    });
    expect([...after.values()].filter((l) => l.code === GONE)).toEqual([]);
    // Nor is a folder of the deleted member's, though the run made the earlier folders ahead.
    for (const line of goneFiles) expect(existsSync(dirname(join(third.path, line.path))), line.path).toBe(false);
    const changedSet = new Set(changed);
    const [b, c] = [await inodesOf(second.path), await inodesOf(third.path)];
    for (const [key, line] of after) {
      const old = before.get(key)!;
      if (changedSet.has(fileId(line))) {
        expect(line.sha256, key).not.toBe(old.sha256);
        expect(c.get(key), key).not.toBe(b.get(key));
      } else expect(c.get(key), key).toBe(b.get(key));
    }
    expect(third.bytes.new).toBe([...after.values()].filter((l) => changedSet.has(fileId(l))).reduce((n, l) => n + l.size, 0));
  });

  it('diff names the changed files and the deleted member\'s files, by member', async () => {
    const [second, third] = [runs[1]!.result.snapshot!, runs[2]!.result.snapshot!];
    const diff = await diffSnapshots(archive, `@${second.id}`, third.id);
    const before = await manifestOf(second.path);
    const goneFiles = [...before.values()].filter((l) => l.code === GONE).map(fileId).sort();
    expect(diff.counts).toEqual({ added: 0, changed: changed.length, deleted: goneFiles.length });
    const gone = diff.members.find((m) => m.code === GONE)!;
    expect(gone.files.map((f) => f.change)).toEqual(goneFiles.map(() => 'deleted'));
    expect(gone.files.map((f) => fileId(f.line)).sort()).toEqual(goneFiles);
    const named = diff.members.flatMap((m) => m.files.filter((f) => f.change === 'changed').map((f) => fileId(f.line)));
    expect(named.sort()).toEqual([...changed].sort());
  });

  it('every snapshot verifies, the earlier ones untouched by the later runs; latest names the third', async () => {
    for (const { result } of runs) {
      const verified = await verifyExport(result.snapshot!.path);
      expect(verified.problems, result.snapshot!.id).toEqual([]);
      expect(verified.ok).toBe(result.snapshot!.counts.files);
    }
    expect((await readFile(join(archive, 'latest'), 'utf8')).trim()).toBe(runs[2]!.result.snapshot!.id);
    expect((await readdir(join(archive, 'snapshots'))).sort()).toEqual(runs.map((r) => r.result.snapshot!.id).sort());
    expect(existsSync(join(runs[2]!.result.snapshot!.path, '.wds-tmp'))).toBe(false);
  });

  it.each([0, 2])('snapshot %i imports into a company without files byte for byte', async (n) => {
    await target().control('POST', '/reset');
    expect(await attachmentFacts(target())).toEqual([]);
    const result = await importAttachments(importer(), runs[n]!.result.snapshot!.path);
    expect(result.report.problems).toBe(0);
    expect(await attachmentFacts(target())).toEqual(runs[n]!.facts);
  });
});
