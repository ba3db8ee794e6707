/**
 * `archive diff A B`: the files added, changed (other bytes) and deleted from snapshot A to
 * snapshot B, grouped by member, from the two manifests alone.
 */
import { dirname, join } from 'node:path';
import { findSnapshot } from './store.js';
import { openManifestInOrder } from '../sinks/manifest-order.js';
import type { ArchiveStore } from './archive-store.js';
import { MANIFEST_NAME, compareLines, type ManifestLine } from '../sinks/manifest.js';

export type FileChange = 'added' | 'changed' | 'deleted';

/** One file that differs between the snapshots: B's line, or A's for a deleted file. */
export interface DiffEntry {
  change: FileChange;
  line: ManifestLine;
}

export interface SnapshotDiff {
  from: string;
  to: string;
  counts: Record<FileChange, number>;
  /** Members with a difference, by code, each with its files in manifest order. */
  members: { code: string; files: DiffEntry[] }[];
}

/** `archive` is a folder's path, or an archive store (a bucket archive's). */
export async function diffSnapshots(archive: string | ArchiveStore, a: string, b: string): Promise<SnapshotDiff> {
  const find = (ref: string) => (typeof archive === 'string' ? findSnapshot(archive, ref) : archive.findSnapshot(ref));
  const [from, to] = [await find(a), await find(b)];
  const counts: Record<FileChange, number> = { added: 0, changed: 0, deleted: 0 };
  const byMember = new Map<string, DiffEntry[]>();
  const onChange = (entry: DiffEntry): void => {
    counts[entry.change] += 1;
    const files = byMember.get(entry.line.code) ?? [];
    files.push(entry);
    byMember.set(entry.line.code, files);
  };
  if (typeof archive === 'string' || archive.kind === 'folder') await mergeManifests(join(from.dir, MANIFEST_NAME), join(to.dir, MANIFEST_NAME), onChange);
  else {
    // A bucket's manifests are downloaded to temporary files as they arrive, then merged as a folder's are.
    const before = await archive.manifestFile(from);
    try {
      const after = await archive.manifestFile(to);
      try {
        await mergeManifests(before.file, after.file, onChange);
      } finally {
        await after.release();
      }
    } finally {
      await before.release();
    }
  }
  const members = [...byMember].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([code, files]) => ({ code, files }));
  return { from: from.id, to: to.id, counts, members };
}

/**
 * The two snapshots' manifests read side by side, as a merge of two sorted lists: what a snapshot
 * holds is not kept in memory, only what differs (issue 46). A manifest not in the order
 * wds-files writes (one edited by hand) is sorted through temporary files first (manifest-order.ts).
 */
async function mergeManifests(fromFile: string, toFile: string, onChange: (entry: DiffEntry) => void): Promise<void> {
  const open = (file: string) => openManifestInOrder(dirname(file), { file });
  const [first, second] = [await open(fromFile), await open(toFile).catch(async (error: unknown) => {
    await first.close();
    throw error;
  })];
  const before = first.lines();
  const after = second.lines();
  try {
    let a = (await before.next()).value?.line;
    let b = (await after.next()).value?.line;
    while (a || b) {
      const order = !a ? 1 : !b ? -1 : compareLines(a, b);
      if (order < 0) onChange({ change: 'deleted', line: a! });
      else if (order > 0) onChange({ change: 'added', line: b! });
      else if (a!.sha256 !== b!.sha256 || a!.size !== b!.size) onChange({ change: 'changed', line: b! });
      if (order <= 0) a = (await before.next()).value?.line;
      if (order >= 0) b = (await after.next()).value?.line;
    }
  } finally {
    await before.return(undefined);
    await after.return(undefined);
    await first.close();
    await second.close();
  }
}
