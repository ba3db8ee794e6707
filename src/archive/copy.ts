/**
 * `archive copy SRC DST` (DESIGN.md section 13): the snapshots of one archive copied into another,
 * folder or bucket either way, sending only content the destination lacks: into a bucket, objects
 * it does not hold yet (by sha256, from one listing); into a folder, files no snapshot there holds
 * already (those are hard-linked). Each file's bytes are checked against its manifest line before
 * they are written, and a snapshot is written whole (manifest, then snapshot.json) or not at all.
 * The manifest and snapshot.json are carried over as they are. The destination's `latest` moves to
 * the newest complete snapshot copied, when that is newer than the one it names.
 */
import { createHash, randomBytes } from 'node:crypto';
import { link, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { MANIFEST_NAME, type ManifestLine } from '../sinks/manifest.js';
import { SNAPSHOT_FILE, compareSnapshotIds, isAccepted, partialDir, snapshotDir, writeLatest, type SnapshotEntry } from './store.js';
import type { ArchiveStore } from './archive-store.js';
import type { BucketStore } from './bucket/store.js';
import type { ObjectLock } from './bucket/address.js';
import { retainUntil } from './bucket/s3.js';
import type { TargetLock } from '../util/target-lock.js';

export interface CopyResult {
  /** Snapshots copied, oldest first. */
  copied: string[];
  /** Snapshots the destination held already. */
  present: string[];
  /** Files sent to the destination (objects uploaded, or files written), and their bytes. */
  sent: { files: number; bytes: number };
  /** Files the destination held already (an object, or a file hard-linked). */
  reused: number;
  /** Where `latest` of the destination points after the copy (null: unchanged). */
  latest: string | null;
}

export interface CopyOptions {
  /** Only these snapshots (`@ID`, `latest`...); default every finished snapshot of the source. */
  snapshots?: string[];
  /** The destination's lock, held by the caller; checked before each snapshot is completed. */
  lock?: TargetLock;
  /** Object Lock for a bucket destination (else the one it records). */
  objectLock?: ObjectLock;
  signal?: AbortSignal;
}

/** Content the destination holds, and how to write a snapshot into it. */
interface Destination {
  has(line: ManifestLine): boolean;
  /** Takes a file into the snapshot being written: from what the destination holds, or `bytes`. */
  put(id: string, line: ManifestLine, bytes: Buffer | null): Promise<void>;
  finish(id: string, manifest: string, doc: string): Promise<void>;
  abort(id: string): Promise<void>;
  setLatest(id: string): Promise<void>;
}

export async function copyArchive(from: ArchiveStore, to: ArchiveStore, options: CopyOptions = {}): Promise<CopyResult> {
  const { snapshots } = await from.listSnapshots();
  const wanted = options.snapshots
    ? [...new Map((await Promise.all(options.snapshots.map((ref) => from.findSnapshot(ref)))).map((s) => [s.id, s])).values()].sort((a, b) => compareSnapshotIds(a.id, b.id))
    : snapshots.filter((s) => s.doc !== null);
  const there = new Set((await to.listSnapshots()).snapshots.map((s) => s.id));
  const destination = to.kind === 'bucket' ? await bucketDestination(to as BucketStore, options.objectLock) : await folderDestination(to);
  const result: CopyResult = { copied: [], present: [], sent: { files: 0, bytes: 0 }, reused: 0, latest: null };
  let newest: SnapshotEntry | null = null;
  for (const snapshot of wanted) {
    if (there.has(snapshot.id)) {
      result.present.push(snapshot.id);
      continue;
    }
    options.signal?.throwIfAborted();
    const texts = await from.readSnapshotTexts(snapshot);
    const manifest = await from.readManifest(snapshot);
    if (manifest.problems.length) throw new Error(`${snapshot.dir}/${MANIFEST_NAME} ${manifest.problems[0]}; not copied (archive check says more)`);
    try {
      for (const line of manifest.lines.values()) {
        options.signal?.throwIfAborted();
        if (destination.has(line)) {
          result.reused += 1;
          await destination.put(snapshot.id, line, null);
          continue;
        }
        const bytes = await from.readFile(snapshot, line);
        const sha256 = createHash('sha256').update(bytes).digest('hex');
        if (sha256 !== line.sha256 || bytes.length !== line.size) {
          throw new Error(`${snapshot.dir} ${line.path}: ${bytes.length} bytes with sha256 ${sha256} in the source, the manifest says ${line.size} bytes, ${line.sha256}; snapshot ${snapshot.id} not copied (archive check says more)`);
        }
        await destination.put(snapshot.id, line, bytes);
        result.sent.files += 1;
        result.sent.bytes += bytes.length;
      }
      await options.lock?.assertHeld();
      await destination.finish(snapshot.id, texts.manifest, texts.doc);
    } catch (error) {
      await destination.abort(snapshot.id).catch(() => undefined);
      throw error;
    }
    result.copied.push(snapshot.id);
    if (isAccepted(snapshot.doc)) newest = snapshot;
  }
  if (newest) {
    const current = await to.readLatest();
    if (current === null || compareSnapshotIds(newest.id, current) > 0) {
      await destination.setLatest(newest.id);
      result.latest = newest.id;
    }
  }
  return result;
}

async function bucketDestination(to: BucketStore, asked?: ObjectLock): Promise<Destination> {
  const data = await to.listData();
  const lock = await to.lockToUse(asked);
  // Every object this copy writes is locked at least until this date's retain-until.
  const since = Date.now();
  /** Snapshots that name an object the bucket held already, whose retain-until is not known here. */
  const reusing = new Set<string>();
  return {
    has: (line) => data.get(line.sha256)?.size === line.size,
    async put(id, line, bytes) {
      if (!bytes) {
        reusing.add(id);
        return;
      }
      await to.putData(line.sha256, line.size, bytes, lock);
      data.set(line.sha256, { size: line.size, modified: new Date() });
    },
    // A snapshot of new objects only is locked until their date; one that reuses objects gets no
    // marker, and the next forget extends all its objects.
    finish: (id, manifest, doc) => to.putSnapshot(id, manifest, doc, lock, lock && !reusing.has(id) ? retainUntil(lock, since) : undefined),
    abort: async () => undefined,
    setLatest: (id) => to.writeLatest(id),
  };
}

async function folderDestination(to: ArchiveStore): Promise<Destination> {
  const archive = to.where;
  // Every file the folder archive holds, by sha256: linked rather than written again.
  const held = new Map<string, string>();
  for (const snapshot of (await to.listSnapshots()).snapshots) {
    const manifest = await to.readManifest(snapshot).catch(() => null);
    for (const line of manifest?.lines.values() ?? []) held.set(`${line.sha256}:${line.size}`, join(snapshot.dir, line.path));
  }
  return {
    has: (line) => held.has(`${line.sha256}:${line.size}`),
    async put(id, line, bytes) {
      const path = join(partialDir(archive, id), line.path);
      await mkdir(dirname(path), { recursive: true });
      if (bytes) {
        const temp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
        await writeFile(temp, bytes);
        await rename(temp, path);
        held.set(`${line.sha256}:${line.size}`, path.replace(partialDir(archive, id), snapshotDir(archive, id)));
        return;
      }
      const source = held.get(`${line.sha256}:${line.size}`)!;
      await rm(path, { force: true });
      await link(source, path).catch(async (error: unknown) => {
        // A file system without hard links, or the link limit reached: a copy.
        if (!['EXDEV', 'EPERM', 'EMLINK', 'ENOTSUP'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
        const { copyFile } = await import('node:fs/promises');
        await copyFile(source, path);
      });
    },
    async finish(id, manifest, doc) {
      const dir = partialDir(archive, id);
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, MANIFEST_NAME), manifest);
      await writeFile(join(dir, SNAPSHOT_FILE), doc);
      await rename(dir, snapshotDir(archive, id));
    },
    abort: (id) => rm(partialDir(archive, id), { recursive: true, force: true }),
    setLatest: (id) => writeLatest(archive, id),
  };
}
