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
import { LinkCheck, MANIFEST_NAME, compareLines, type ManifestLine } from '../sinks/manifest.js';
import { ItemSpill } from '../stages/report-spill.js';
import { isAccepted, listSnapshots, readLatest, LATEST_FILE, snapshotDir, type SnapshotEntry } from './store.js';
import { openManifestInOrder, type NumberedLine, type OrderedManifest } from '../sinks/manifest-order.js';
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

/** Bytes read at a time from each manifest: every snapshot's is open at once. */
const MANIFEST_BLOCK_BYTES = 32 * 1024;
/** Groups of copies gathered before they are written to the temporary file. */
const GROUPS_PER_PART = 1000;

/**
 * Checks every snapshot's files as a merge of their manifests by key, so that what is kept does
 * not grow with the files (issue 46): the copies of one file in the snapshots are side by side,
 * grouped by inode there, and each group of present copies goes to a temporary file from which
 * `readDataPercent` of them are drawn. A file linked under other keys in other snapshots (rare:
 * `archive copy` links by content) is one group a key, and read once for each.
 */
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
  const opened: { snapshot: SnapshotEntry; manifest: OrderedManifest; lines: AsyncGenerator<NumberedLine>; links: LinkCheck }[] = [];
  const groups = options.readDataPercent ? ItemSpill.create<Present[]>(result) : null;
  let groupCount = 0;
  try {
    for (const snapshot of snapshots) {
      if (!snapshot.doc) problem(snapshot.id, snapshot.problem ?? 'snapshot.json cannot be read');
      let manifest;
      try {
        manifest = await openManifestInOrder(snapshot.dir, { blockBytes: MANIFEST_BLOCK_BYTES });
      } catch {
        problem(snapshot.id, `no readable ${MANIFEST_NAME}`);
        continue;
      }
      opened.push({ snapshot, manifest, lines: manifest.lines(), links: new LinkCheck(snapshot.dir) });
      for (const p of manifest.problems) problem(snapshot.id, `${MANIFEST_NAME} ${p}`);
      if (snapshot.doc && snapshot.doc.counts.files !== manifest.count) {
        problem(snapshot.id, `snapshot.json counts ${snapshot.doc.counts.files} files, the manifest lists ${manifest.count}`);
      }
    }
    /** One copy of a file: present with its size (answered, to be grouped by inode), or damaged. */
    const checkCopy = async (snapshot: SnapshotEntry, links: LinkCheck, line: ManifestLine): Promise<Present | null> => {
      result.files += 1;
      const link = await links.linkIn(line.path);
      if (link) {
        problem(snapshot.id, LinkCheck.reason(link), line.path);
        return null;
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
      } else return { snapshot: snapshot.id, line, path, inode: `${info.dev}:${info.ino}` };
      return null;
    };
    const heads = await Promise.all(opened.map(async (o) => (await o.lines.next()).value as NumberedLine | undefined));
    let part: Present[][] = [];
    for (;;) {
      let first: ManifestLine | undefined;
      for (const head of heads) if (head && (!first || compareLines(head.line, first) < 0)) first = head.line;
      if (!first) break;
      const byInode = new Map<string, Present[]>();
      for (let i = 0; i < opened.length; i += 1) {
        const head = heads[i];
        if (!head || compareLines(head.line, first) !== 0) continue;
        const present = await checkCopy(opened[i]!.snapshot, opened[i]!.links, head.line);
        if (present) byInode.set(present.inode, [...(byInode.get(present.inode) ?? []), present]);
        heads[i] = (await opened[i]!.lines.next()).value as NumberedLine | undefined;
      }
      if (!groups) continue;
      part.push(...byInode.values());
      if (part.length >= GROUPS_PER_PART) {
        groups.append(part);
        groupCount += part.length;
        part = [];
      }
    }
    groups?.append(part);
    groupCount += part.length;
    part = [];
  } finally {
    await Promise.all(opened.map(async (o) => {
      await o.lines.return(undefined);
      await o.manifest.close();
    }));
  }
  // In the order of the snapshots, as each was checked in turn before the merge.
  const order = new Map(snapshots.map((s, i) => [s.id, i]));
  result.problems.sort((a, b) => order.get(a.snapshot)! - order.get(b.snapshot)!);
  result.damaged.sort((a, b) => order.get(a.snapshot)! - order.get(b.snapshot)!);
  await checkLatest(archive, snapshots.filter((s) => isAccepted(s.doc)).map((s) => s.id), problem);
  if (groups) {
    try {
      const found = await readData(groups, groupCount, Math.ceil((groupCount * options.readDataPercent!) / 100), result, problem, damage);
      // Recorded, so that the next run downloads these rather than link them forward.
      await noteDamaged(archive, found).catch((error: unknown) => {
        result.unrecorded = `${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
      });
    } finally {
      groups.close();
    }
  }
  return result;
}

/**
 * Hashes `share` of the `count` groups of copies, drawn at random as they are read back (Knuth's
 * selection sampling: each of them with the chance of the draws left among the groups left), and
 * answers the copies found damaged.
 */
async function readData(groups: ItemSpill<Present[]>, count: number, share: number, result: CheckResult, problem: (snapshot: string, text: string, path?: string) => void, damage: (copy: DamagedCopy, text: string) => void): Promise<DamagedFile[]> {
  const found: DamagedFile[] = [];
  const at = new Date().toISOString();
  let seen = 0;
  for (const same of groups.read()) {
    const draw = Math.random() * (count - seen) < share - result.read;
    seen += 1;
    if (!draw) continue;
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
  return found;
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
