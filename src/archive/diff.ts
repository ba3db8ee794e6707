/**
 * `archive diff A B`: the files added, changed (other bytes) and deleted from snapshot A to
 * snapshot B, grouped by member, from the two manifests alone.
 */
import { findSnapshot } from './store.js';
import { openManifestInOrder } from '../sinks/manifest-order.js';
import type { ArchiveStore } from './archive-store.js';
import { compareLines, sortLines, type ManifestLine } from '../sinks/manifest.js';

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
  if (typeof archive === 'string' || archive.kind === 'folder') await mergeManifests(from.dir, to.dir, onChange);
  else diffMaps((await archive.readManifest(from)).lines, (await archive.readManifest(to)).lines).forEach(onChange);
  const members = [...byMember].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([code, files]) => ({ code, files }));
  return { from: from.id, to: to.id, counts, members };
}

/** What differs between two manifests by key, in manifest order. */
function diffMaps(before: ReadonlyMap<string, ManifestLine>, after: ReadonlyMap<string, ManifestLine>): DiffEntry[] {
  const changes = new Map<ManifestLine, FileChange>();
  for (const [key, line] of after) {
    const old = before.get(key);
    if (!old) changes.set(line, 'added');
    else if (old.sha256 !== line.sha256 || old.size !== line.size) changes.set(line, 'changed');
  }
  for (const [key, line] of before) if (!after.has(key)) changes.set(line, 'deleted');
  return sortLines(changes.keys()).map((line) => ({ change: changes.get(line)!, line }));
}

/**
 * The two snapshots' manifests read side by side, as a merge of two sorted lists: what a snapshot
 * holds is not kept in memory, only what differs (issue 46). A manifest not in the order
 * wds-files writes (one edited by hand) is sorted through temporary files first (manifest-order.ts).
 */
async function mergeManifests(fromDir: string, toDir: string, onChange: (entry: DiffEntry) => void): Promise<void> {
  const [first, second] = [await openManifestInOrder(fromDir), await openManifestInOrder(toDir).catch(async (error: unknown) => {
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
