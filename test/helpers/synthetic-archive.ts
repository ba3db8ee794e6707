/**
 * A folder archive of many tiny files made on disk without the emulator, for the tests and the
 * bench of the commands that read archives (verify, check, diff, restore, copy): a full archive
 * run of 20,000 files takes minutes on a loaded machine, this a few seconds. The manifests are
 * written by the archive's own code (writeSortedManifest, from appended lines as a run appends
 * them), the snapshot.json passes the archive's schema, and the second snapshot hard-links the
 * first's unchanged files as a run does: a real archive, as `archive check` sees it. Its files are
 * made with synchronous calls, about twice as fast as a promise each for files this small.
 */
import { createHash } from 'node:crypto';
import { linkSync, mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, open, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { formatLine, type ManifestLine } from '../../src/sinks/manifest.js';
import { writeSortedManifest } from '../../src/sinks/manifest-sort.js';
import { sourceLineText } from '../../src/sinks/source.js';
import { snapshotDocSchema, writeLatest, type SnapshotDoc } from '../../src/archive/store.js';

export interface SyntheticArchive {
  archive: string;
  /** The two snapshots' ids, oldest first. */
  ids: [string, string];
  files: number;
  /** What the second snapshot changed: files with other bytes, files added, files deleted. */
  changed: number;
  added: number;
  deleted: number;
}

const SOURCE = { base_url: 'https://synthetic.example', company: 'synthetic' };
/** Files a member: ten, so that the snapshots hold a tenth as many folders as files. Named .pdf, which a zip stores rather than deflates: a restore to a zip costs a third less. */
const PER_MEMBER = 10;

const code = (member: number): string => `M${String(member).padStart(6, '0')}`;

function lineOf(n: number, bytes: Buffer): ManifestLine {
  const member = Math.floor(n / PER_MEMBER);
  const fileName = `f${n % PER_MEMBER}.pdf`;
  return {
    kind: 'attachment', code: code(member), sheet_id: 1, custom_field_id: 2, record_index: 0, file_name: fileName,
    path: `attachments/1/2/${code(member)}/${fileName}`, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex'),
    updated_at: '2026-11-01T00:00:00.000Z',
  };
}

const contentOf = (n: number, version: number): Buffer => Buffer.from(`file ${n} v${version}\n`);

/** Appends `lines` to `file` a block at a time, as a run appends its manifest. */
async function appendLines(file: string, lines: Iterable<ManifestLine>): Promise<void> {
  const handle = await open(file, 'w');
  try {
      let part: string[] = [];
      for (const line of lines) {
        part.push(formatLine(line));
        if (part.length >= 1000) {
          await handle.write(part.join(''));
          part = [];
        }
      }
      await handle.write(part.join(''));
  } finally {
    await handle.close();
  }
}

async function finishSnapshot(archive: string, id: string, appended: string, doc: SnapshotDoc): Promise<void> {
  const partial = join(archive, 'snapshots', `${id}.partial`);
  await writeSortedManifest(appended, join(partial, 'manifest.jsonl'), undefined, sourceLineText(SOURCE));
  await writeFile(join(partial, 'snapshot.json'), `${JSON.stringify(snapshotDocSchema.parse(doc), null, 2)}\n`);
  await rename(partial, join(archive, 'snapshots', id));
}

/**
 * Makes `archive` with two complete snapshots: the first of `files` tiny files, the second with a
 * hundredth of them changed, as many added and as many deleted, the rest hard links to the first's.
 */
export async function makeSyntheticArchive(archive: string, files: number): Promise<SyntheticArchive> {
  const ids: [string, string] = ['2026-11-01T020000', '2026-11-02T020000'];
  const share = Math.max(1, Math.floor(files / 100));
  const doc = (counts: Partial<SnapshotDoc['counts']> & { files: number }, previous: string | null, bytes: number): SnapshotDoc => ({
    pipeline: 'synthetic', started_at: '2026-11-01T02:00:00.000Z', finished_at: '2026-11-01T02:01:00.000Z', complete: true,
    counts: { new: 0, changed: 0, unchanged: 0, deleted: 0, failed: 0, ...counts }, bytes: { total: bytes, new: bytes }, previous, source: SOURCE,
  });
  await mkdir(join(archive, 'snapshots'), { recursive: true });
  const work = `${archive}.work`;
  await mkdir(work, { recursive: true });
  try {

  // The first snapshot: every file new.
  const first = join(archive, 'snapshots', `${ids[0]}.partial`);
  const firstLines: ManifestLine[] = [];
  let bytes = 0;
  for (let n = 0; n < files; n += 1) {
    const content = contentOf(n, 1);
    const line = lineOf(n, content);
    if (n % PER_MEMBER === 0) mkdirSync(dirname(join(first, line.path)), { recursive: true });
    writeFileSync(join(first, line.path), content);
    firstLines.push(line);
    bytes += content.length;
  }
  await appendLines(join(work, 'first.jsonl'), firstLines);
  await finishSnapshot(archive, ids[0], join(work, 'first.jsonl'), doc({ files, new: files }, null, bytes));

  // The second: the first `share` files deleted, the next `share` changed, `share` new ones after the last.
  const from = join(archive, 'snapshots', ids[0]);
  const second = join(archive, 'snapshots', `${ids[1]}.partial`);
  const secondLines: ManifestLine[] = [];
  bytes = 0;
  for (let n = share; n < files + share; n += 1) {
    const fresh = n < 2 * share || n >= files;
    const content = contentOf(n, fresh ? 2 : 1);
    const line = fresh ? lineOf(n, content) : firstLines[n]!;
    if (n % PER_MEMBER === 0 || n === share) mkdirSync(dirname(join(second, line.path)), { recursive: true });
    if (fresh) writeFileSync(join(second, line.path), content);
    else linkSync(join(from, line.path), join(second, line.path));
    secondLines.push(line);
    bytes += content.length;
  }
  firstLines.length = 0;
  await appendLines(join(work, 'second.jsonl'), secondLines);
  await finishSnapshot(archive, ids[1], join(work, 'second.jsonl'), doc({ files, new: share, changed: share, unchanged: files - 2 * share, deleted: share }, ids[0], bytes));
  await writeLatest(archive, ids[1]);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return { archive, ids, files, changed: share, added: share, deleted: share };
}
