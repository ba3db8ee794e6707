/**
 * `archive diff A B`: the files added, changed (other bytes) and deleted from snapshot A to
 * snapshot B, grouped by member, from the two manifests alone.
 */
import { findSnapshot, readSnapshotManifest, type SnapshotEntry } from './store.js';
import type { ArchiveStore } from './archive-store.js';
import { sortLines, type ManifestLine } from '../sinks/manifest.js';

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
  const read = (s: SnapshotEntry) => (typeof archive === 'string' ? readSnapshotManifest(s.dir) : archive.readManifest(s));
  const [from, to] = [await find(a), await find(b)];
  const before = (await read(from)).lines;
  const after = (await read(to)).lines;
  const changes = new Map<ManifestLine, FileChange>();
  for (const [key, line] of after) {
    const old = before.get(key);
    if (!old) changes.set(line, 'added');
    else if (old.sha256 !== line.sha256 || old.size !== line.size) changes.set(line, 'changed');
  }
  for (const [key, line] of before) if (!after.has(key)) changes.set(line, 'deleted');
  const counts: Record<FileChange, number> = { added: 0, changed: 0, deleted: 0 };
  const byMember = new Map<string, DiffEntry[]>();
  for (const line of sortLines(changes.keys())) {
    const change = changes.get(line)!;
    counts[change] += 1;
    const files = byMember.get(line.code) ?? [];
    files.push({ change, line });
    byMember.set(line.code, files);
  }
  const members = [...byMember].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([code, files]) => ({ code, files }));
  return { from: from.id, to: to.id, counts, members };
}
