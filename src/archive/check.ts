/**
 * `archive check`: the archive's structure (every snapshot's snapshot.json and manifest readable,
 * every file the manifest lists present with its size and last changed while the archive's
 * commands wrote in it (writes.ts), none that an earlier check found damaged, `latest` naming a
 * complete snapshot) and, with `readDataPercent`, the sha256 of that share of the files, chosen at
 * random as restic's `--read-data-subset` does. A file linked into several snapshots is read once.
 * What `--read-data` finds damaged is recorded (damaged.ts) for the next run and `archive repair`.
 */
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { hashFile } from '../util/hash-file.js';
import { LinkCheck, MANIFEST_NAME, type ManifestLine } from '../sinks/manifest.js';
import { isAccepted, listSnapshots, readLatest, readSnapshotManifest, LATEST_FILE, snapshotDir } from './store.js';
import { damagedStill, noteDamaged, type DamagedFile } from './damaged.js';
import { changedOutside, readWrites } from './writes.js';

export interface ArchiveProblem {
  /** The snapshot's id, or `latest`. */
  snapshot: string;
  /** The file inside the snapshot, when the problem is one file's. */
  path?: string;
  problem: string;
}

/** A file of a snapshot that is not what its manifest says (what `archive repair` works on). */
export interface DamagedCopy {
  snapshot: string;
  line: ManifestLine;
  /** Its path on disk. */
  path: string;
  /**
   * `missing` (or not a plain file), `size`, `changed` (its change time outside the archive's own
   * writes: its bytes may still be right), or `sha256` (read, and not the manifest's).
   */
  kind: 'missing' | 'size' | 'changed' | 'sha256';
  /** The file's `dev:ino`, when there is one. */
  inode?: string;
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
  /** Whether change times were compared: false for an archive whose runs recorded no write times (made by an older version). */
  change_times: boolean;
  /** The files behind the problems of single files, for `archive repair`. */
  damaged: DamagedCopy[];
  /** Files `readDataPercent` found damaged now, that could not be recorded for the next run (why). */
  unrecorded?: string;
}

interface Present {
  snapshot: string;
  line: ManifestLine;
  path: string;
  inode: string;
}

export async function checkArchive(archive: string, options: { readDataPercent?: number } = {}): Promise<CheckResult> {
  const { snapshots, partial } = await listSnapshots(archive);
  const writes = await readWrites(archive);
  const known = await damagedStill(archive, (snapshot) => snapshotDir(archive, snapshot));
  const result: CheckResult = { snapshots: snapshots.length, files: 0, read: 0, partial, problems: [], change_times: writes.since !== null, damaged: [] };
  const problem = (snapshot: string, text: string, path?: string): void => {
    result.problems.push({ snapshot, ...(path ? { path } : {}), problem: text });
  };
  const damage = (copy: DamagedCopy, text: string): void => {
    problem(copy.snapshot, text, copy.line.path);
    result.damaged.push(copy);
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
      const copy = { snapshot: snapshot.id, line, path, ...(info ? { inode: `${info.dev}:${info.ino}` } : {}) };
      const found = known.get(path);
      if (!info) damage({ ...copy, kind: 'missing' }, 'missing');
      else if (!info.isFile()) damage({ ...copy, kind: 'missing' }, 'not a plain file');
      else if (info.size !== line.size) damage({ ...copy, kind: 'size' }, `size ${info.size} bytes, the manifest says ${line.size}`);
      else if (found) damage({ ...copy, kind: 'sha256' }, `${found.problem} (found by archive check --read-data at ${found.found_at})`);
      else if (changedOutside(info.ctimeMs, writes)) {
        damage({ ...copy, kind: 'changed' }, `changed at ${new Date(info.ctimeMs).toISOString()}, when no archive command was writing: its bytes may have been overwritten (archive repair)`);
      } else {
        const inode = `${info.dev}:${info.ino}`;
        const same = byInode.get(inode) ?? [];
        same.push({ snapshot: snapshot.id, line, path, inode });
        byInode.set(inode, same);
      }
    }
  }
  await checkLatest(archive, snapshots.filter((s) => isAccepted(s.doc)).map((s) => s.id), problem);
  if (options.readDataPercent) {
    const files = [...byInode.values()];
    const share = Math.min(files.length, Math.ceil((files.length * options.readDataPercent) / 100));
    const found: DamagedFile[] = [];
    const at = new Date().toISOString();
    for (const same of pick(files, share)) {
      result.read += 1;
      const sha256 = await hashFile(same[0]!.path).then((d) => d.sha256, () => null);
      for (const { snapshot, line, path, inode } of same) {
        if (sha256 === null) problem(snapshot, 'cannot be read', line.path);
        else if (sha256 !== line.sha256) {
          damage({ snapshot, line, path, inode, kind: 'sha256' }, 'sha256 differs from the manifest');
          found.push({ snapshot, path: line.path, inode, problem: 'sha256 differs from the manifest', found_at: at });
        }
      }
    }
    // Recorded, so that the next run downloads these rather than link them forward.
    await noteDamaged(archive, found).catch((error: unknown) => {
      result.unrecorded = `${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
    });
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
export function pick<T>(items: T[], n: number): T[] {
  const copy = [...items];
  for (let i = 0; i < n; i += 1) {
    const j = i + Math.floor(Math.random() * (copy.length - i));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy.slice(0, n);
}
