/**
 * `archive diff A B`: the files added, changed (other bytes) and deleted from snapshot A to
 * snapshot B, grouped by member, from the two manifests alone.
 */
import { findSnapshot, readSnapshotLines, readSnapshotManifest, type SnapshotEntry } from './store.js';
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
  const changes: DiffEntry[] = [];
  if (typeof archive !== 'string' || !(await mergeManifests(from.dir, to.dir, (entry) => changes.push(entry)))) {
    changes.splice(0);
    const read = (s: SnapshotEntry) => (typeof archive === 'string' ? readSnapshotManifest(s.dir) : archive.readManifest(s));
    changes.push(...diffMaps((await read(from)).lines, (await read(to)).lines));
  }
  const counts: Record<FileChange, number> = { added: 0, changed: 0, deleted: 0 };
  const byMember = new Map<string, DiffEntry[]>();
  for (const entry of changes) {
    counts[entry.change] += 1;
    const files = byMember.get(entry.line.code) ?? [];
    files.push(entry);
    byMember.set(entry.line.code, files);
  }
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
 * holds is not kept in memory, only what differs. Answers false, having given some changes, when
 * a manifest is not in the order wds-files writes (one edited by hand): the caller then compares
 * them by key.
 */
async function mergeManifests(fromDir: string, toDir: string, onChange: (entry: DiffEntry) => void): Promise<boolean> {
  const before = readSnapshotLines(fromDir);
  const after = readSnapshotLines(toDir);
  let a = (await before.next()).value;
  let b = (await after.next()).value;
  const step = async (lines: AsyncGenerator<ManifestLine>, current: ManifestLine): Promise<ManifestLine | undefined | null> => {
    const next = (await lines.next()).value;
    // null: out of order (or a file given twice).
    return next && compareLines(current, next) >= 0 ? null : next;
  };
  try {
    while (a || b) {
      const order = !a ? 1 : !b ? -1 : compareLines(a, b);
      if (order < 0) onChange({ change: 'deleted', line: a! });
      else if (order > 0) onChange({ change: 'added', line: b! });
      else if (a!.sha256 !== b!.sha256 || a!.size !== b!.size) onChange({ change: 'changed', line: b! });
      if (order <= 0) a = await step(before, a!);
      if (order >= 0) b = await step(after, b!);
      if (a === null || b === null) return false;
    }
    return true;
  } finally {
    await before.return(undefined);
    await after.return(undefined);
  }
}
