/**
 * `archive diff A B`: the files added, changed (other bytes) and deleted from snapshot A to
 * snapshot B, grouped by member, from the two manifests alone.
 */
import { findSnapshot, readSnapshotManifest } from './store.js';
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

export async function diffSnapshots(archive: string, a: string, b: string): Promise<SnapshotDiff> {
  const [from, to] = [await findSnapshot(archive, a), await findSnapshot(archive, b)];
  const before = (await readSnapshotManifest(from.dir)).lines;
  const after = (await readSnapshotManifest(to.dir)).lines;
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
