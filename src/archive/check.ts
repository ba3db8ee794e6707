/**
 * `archive check`: the archive's structure (every snapshot's snapshot.json and manifest readable,
 * every file the manifest lists present with its size, `latest` naming a complete snapshot) and,
 * with `readDataPercent`, the sha256 of that share of the files, chosen at random as restic's
 * `--read-data-subset` does. A file linked into several snapshots is read once.
 */
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { hashFile } from '../util/hash-file.js';
import { LinkCheck, MANIFEST_NAME, type ManifestLine } from '../sinks/manifest.js';
import { listSnapshots, readLatest, readSnapshotManifest, LATEST_FILE } from './store.js';

export interface ArchiveProblem {
  /** The snapshot's id, or `latest`. */
  snapshot: string;
  /** The file inside the snapshot, when the problem is one file's. */
  path?: string;
  problem: string;
}

export interface CheckResult {
  snapshots: number;
  /** Manifest lines checked, over every snapshot. */
  files: number;
  /** Distinct files (inodes) whose sha256 was read. */
  read: number;
  /** Snapshots being built or left by an interrupted run (not problems). */
  partial: string[];
  problems: ArchiveProblem[];
}

interface Present {
  snapshot: string;
  line: ManifestLine;
  path: string;
}

export async function checkArchive(archive: string, options: { readDataPercent?: number } = {}): Promise<CheckResult> {
  const { snapshots, partial } = await listSnapshots(archive);
  const result: CheckResult = { snapshots: snapshots.length, files: 0, read: 0, partial, problems: [] };
  const problem = (snapshot: string, text: string, path?: string): void => {
    result.problems.push({ snapshot, ...(path ? { path } : {}), problem: text });
  };
  /** Files present with their size, by inode: the ones whose bytes may be read. */
  const byInode = new Map<string, Present[]>();
  for (const snapshot of snapshots) {
    if (!snapshot.doc) problem(snapshot.id, snapshot.problem ?? 'snapshot.json cannot be read');
    let manifest;
    try {
      manifest = await readSnapshotManifest(snapshot.dir);
    } catch {
      problem(snapshot.id, `no readable ${MANIFEST_NAME}`);
      continue;
    }
    for (const p of manifest.problems) problem(snapshot.id, `${MANIFEST_NAME} ${p}`);
    if (snapshot.doc && snapshot.doc.counts.files !== manifest.lines.size) {
      problem(snapshot.id, `snapshot.json counts ${snapshot.doc.counts.files} files, the manifest lists ${manifest.lines.size}`);
    }
    const links = new LinkCheck(snapshot.dir);
    for (const line of manifest.lines.values()) {
      result.files += 1;
      const link = await links.linkIn(line.path);
      if (link) {
        problem(snapshot.id, LinkCheck.reason(link), line.path);
        continue;
      }
      const path = join(snapshot.dir, line.path);
      const info = await lstat(path).catch(() => null);
      if (!info) problem(snapshot.id, 'missing', line.path);
      else if (!info.isFile()) problem(snapshot.id, 'not a plain file', line.path);
      else if (info.size !== line.size) problem(snapshot.id, `size ${info.size} bytes, the manifest says ${line.size}`, line.path);
      else {
        const inode = `${info.dev}:${info.ino}`;
        const same = byInode.get(inode) ?? [];
        same.push({ snapshot: snapshot.id, line, path });
        byInode.set(inode, same);
      }
    }
  }
  await checkLatest(archive, snapshots.filter((s) => s.doc?.complete).map((s) => s.id), problem);
  if (options.readDataPercent) {
    const files = [...byInode.values()];
    const share = Math.min(files.length, Math.ceil((files.length * options.readDataPercent) / 100));
    for (const same of pick(files, share)) {
      result.read += 1;
      const sha256 = await hashFile(same[0]!.path).then((d) => d.sha256, () => null);
      for (const { snapshot, line } of same) {
        if (sha256 === null) problem(snapshot, 'cannot be read', line.path);
        else if (sha256 !== line.sha256) problem(snapshot, 'sha256 differs from the manifest', line.path);
      }
    }
  }
  return result;
}

async function checkLatest(archive: string, complete: string[], problem: (snapshot: string, text: string) => void): Promise<void> {
  const latest = await readLatest(archive);
  if (latest === null) {
    if (complete.length) problem(LATEST_FILE, `missing, though ${complete.at(-1)} is complete`);
    return;
  }
  if (!complete.includes(latest)) problem(LATEST_FILE, `names ${latest}, which is not a complete snapshot of ${join(archive)}`);
  else if (latest !== complete.at(-1)) problem(LATEST_FILE, `names ${latest}, but ${complete.at(-1)} is newer and complete`);
}

/** `n` of `items` at random (Fisher-Yates on a copy). */
function pick<T>(items: T[], n: number): T[] {
  const copy = [...items];
  for (let i = 0; i < n; i += 1) {
    const j = i + Math.floor(Math.random() * (copy.length - i));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy.slice(0, n);
}
