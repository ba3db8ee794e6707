/**
 * `archive copy SRC DST` (DESIGN.md section 13): the snapshots of one archive copied into another,
 * folder or bucket either way, sending only content the destination lacks: into a bucket, objects
 * it does not hold yet (by sha256, from one listing); into a folder, files no snapshot there holds
 * already (those are hard-linked). Each file's bytes are checked against its manifest line before
 * they are written, and a snapshot is written whole (manifest, then snapshot.json) or not at all.
 * The manifest and snapshot.json are carried over as they are. The destination's `latest` moves to
 * the newest complete snapshot copied, when that is newer than the one it names.
 *
 * Memory does not grow with the files (issue 46): what the destination holds is an index on disk,
 * one line a content (`sha256:size`) sorted by it, and each snapshot's lines are sorted the same
 * way through temporary files and joined with it in one pass, which also writes the index the next
 * snapshot reads (the old one with this snapshot's new content).
 */
import { createHash, randomBytes } from 'node:crypto';
import { copyFile, link, mkdir, open, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { MANIFEST_NAME, type ManifestLine } from '../sinks/manifest.js';
import { openManifestInOrder } from '../sinks/manifest-order.js';
import { SortedSpill } from '../util/sorted-spill.js';
import { readLines } from '../util/line-reader.js';
import { SNAPSHOT_FILE, compareSnapshotIds, isAccepted, partialDir, snapshotDir, writeLatest, type SnapshotEntry } from './store.js';
import type { ArchiveStore } from './archive-store.js';
import type { BucketStore } from './bucket/store.js';
import type { ObjectLock } from './bucket/address.js';
import { retainUntil } from './bucket/s3.js';
import type { TargetLock } from '../util/target-lock.js';
import { makeTempDir } from '../util/temp-dir.js';

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

/** What the destination holds of a content: the path of a file in a folder archive (where to link from), nothing in a bucket. */
type Held = string;

/** Content the destination holds, and how to write a snapshot into it. */
interface Destination {
  /** Every content the destination holds, in any order: what the first index is made of. */
  held(): AsyncGenerator<[key: string, held: Held]>;
  /**
   * Takes a file into the snapshot being written: `bytes`, or (null) what the destination holds,
   * `from` (for a content written earlier in this snapshot, where it was written). Answers what the
   * index is to keep of it once the snapshot is finished.
   */
  put(id: string, line: ManifestLine, bytes: Buffer | null, from: Held | null): Promise<{ now: Held; finished: Held }>;
  /** Completes the snapshot with the manifest in file `manifest` and the snapshot.json `doc`, as stored in the source. */
  finish(id: string, manifest: string, doc: string): Promise<void>;
  abort(id: string): Promise<void>;
  setLatest(id: string): Promise<void>;
}

/** The index key of a line's content. sha256 is of fixed length, so keys sort by sha256 first. */
const keyOf = (line: Pick<ManifestLine, 'sha256' | 'size'>): string => `${line.sha256}:${line.size}`;

/** Manifest lines sorted in memory at a time: a line's object is about a kilobyte of heap, an index line a tenth of that. */
const LINES_A_RUN = 2048;

/** Index lines written at a time. */
const WRITE_LINES = 1000;

/** A sorted file of `[key, held]` lines written in key order, a part at a time. */
class IndexWriter {
  private part: string[] = [];
  private lastKey: string | null = null;
  private constructor(private readonly handle: FileHandle) {}

  static async create(path: string): Promise<IndexWriter> {
    return new IndexWriter(await open(path, 'w'));
  }

  /** Adds `key` unless it is the last key added (a content once). */
  async add(key: string, held: Held): Promise<void> {
    if (key === this.lastKey) return;
    this.lastKey = key;
    this.part.push(`${JSON.stringify([key, held])}\n`);
    if (this.part.length >= WRITE_LINES) await this.flush();
  }

  private async flush(): Promise<void> {
    await this.handle.write(this.part.join(''));
    this.part = [];
  }

  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      await this.handle.close();
    }
  }
}

/** An index file read in key order, one line ahead. */
class IndexReader {
  private readonly lines: AsyncGenerator<{ bytes: Buffer }>;
  head: [string, Held] | undefined;
  constructor(path: string) {
    this.lines = readLines(path, { blockBytes: 64 * 1024 });
  }

  async next(): Promise<void> {
    const read = await this.lines.next();
    this.head = read.done ? undefined : (JSON.parse(read.value.bytes.toString('utf8')) as [string, Held]);
  }

  async close(): Promise<void> {
    await this.lines.return(undefined);
  }
}

export async function copyArchive(from: ArchiveStore, to: ArchiveStore, options: CopyOptions = {}): Promise<CopyResult> {
  const { snapshots } = await from.listSnapshots();
  const wanted = options.snapshots
    ? [...new Map((await Promise.all(options.snapshots.map((ref) => from.findSnapshot(ref)))).map((s) => [s.id, s])).values()].sort((a, b) => compareSnapshotIds(a.id, b.id))
    : snapshots.filter((s) => s.doc !== null);
  const there = new Set((await to.listSnapshots()).snapshots.map((s) => s.id));
  const result: CopyResult = { copied: [], present: [], sent: { files: 0, bytes: 0 }, reused: 0, latest: null };
  const missing = wanted.filter((snapshot) => !there.has(snapshot.id));
  result.present = wanted.filter((snapshot) => there.has(snapshot.id)).map((snapshot) => snapshot.id);
  // Made even when nothing is to be copied: a bucket records the Object Lock asked for.
  const destination = to.kind === 'bucket' ? await bucketDestination(to as BucketStore, options.objectLock) : folderDestination(to);
  if (missing.length === 0) return result;
  const temp = await makeTempDir('copy');
  let newest: SnapshotEntry | null = null;
  try {
    let index = join(temp, 'index-0');
    await writeIndex(destination.held(), index);
    for (const snapshot of missing) {
      options.signal?.throwIfAborted();
      const next = join(temp, `index-${result.copied.length + 1}`);
      await copySnapshot(from, snapshot, destination, { index, next, result, options });
      await rm(index);
      index = next;
      result.copied.push(snapshot.id);
      if (isAccepted(snapshot.doc)) newest = snapshot;
    }
  } finally {
    await rm(temp, { recursive: true, force: true });
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

/** Sorts what the destination holds into the first index (the newest of a content's copies kept, as held() gives them oldest first). */
async function writeIndex(held: AsyncGenerator<[string, Held]>, path: string): Promise<void> {
  const spill = new SortedSpill<Held>();
  try {
    for await (const [key, value] of held) await spill.add(key, value);
    const writer = await IndexWriter.create(path);
    try {
      let pending: [string, Held] | undefined;
      for await (const pair of spill.sorted()) {
        if (pending && pending[0] !== pair[0]) await writer.add(...pending);
        pending = pair;
      }
      if (pending) await writer.add(...pending);
    } finally {
      await writer.close();
    }
  } finally {
    spill.close();
  }
}

/**
 * Copies one snapshot: its lines sorted by content and joined with the index at `index`, every
 * file taken from the destination where it holds the content, else read, checked and written;
 * `next` gets the index with this snapshot's new content. Written whole or not at all.
 */
async function copySnapshot(from: ArchiveStore, snapshot: SnapshotEntry, destination: Destination, at: { index: string; next: string; result: CopyResult; options: CopyOptions }): Promise<void> {
  const { result, options } = at;
  const manifestFile = await from.manifestFile(snapshot);
  const spill = new SortedSpill<ManifestLine>(LINES_A_RUN);
  try {
    const manifest = await openManifestInOrder(dirname(manifestFile.file), { file: manifestFile.file });
    try {
      if (manifest.problems.length) throw new Error(`${snapshot.dir}/${MANIFEST_NAME} ${manifest.problems[0]}; not copied (archive check says more)`);
      for await (const { line } of manifest.lines()) await spill.add(keyOf(line), line);
    } finally {
      await manifest.close();
    }
    const doc = await from.readSnapshotDoc(snapshot);
    const index = new IndexReader(at.index);
    const writer = await IndexWriter.create(at.next);
    try {
      await index.next();
      /** The content this snapshot wrote last: a later file of the same content is taken from it. */
      let written: { key: string; now: Held } | null = null;
      for await (const [key, line] of spill.sorted()) {
        options.signal?.throwIfAborted();
        while (index.head && index.head[0] < key) {
          await writer.add(...index.head);
          await index.next();
        }
        const held = index.head?.[0] === key ? index.head[1] : written?.key === key ? written.now : null;
        if (held !== null) {
          result.reused += 1;
          await destination.put(snapshot.id, line, null, held);
          continue;
        }
        const bytes = await from.readFile(snapshot, line);
        const sha256 = createHash('sha256').update(bytes).digest('hex');
        if (sha256 !== line.sha256 || bytes.length !== line.size) {
          throw new Error(`${snapshot.dir} ${line.path}: ${bytes.length} bytes with sha256 ${sha256} in the source, the manifest says ${line.size} bytes, ${line.sha256}; snapshot ${snapshot.id} not copied (archive check says more)`);
        }
        const { now, finished } = await destination.put(snapshot.id, line, bytes, null);
        written = { key, now };
        await writer.add(key, finished);
        result.sent.files += 1;
        result.sent.bytes += bytes.length;
      }
      for (; index.head; await index.next()) await writer.add(...index.head);
    } finally {
      await index.close();
      await writer.close();
    }
    await options.lock?.assertHeld();
    await destination.finish(snapshot.id, manifestFile.file, doc);
  } catch (error) {
    await destination.abort(snapshot.id).catch(() => undefined);
    throw error;
  } finally {
    spill.close();
    await manifestFile.release();
  }
}

async function bucketDestination(to: BucketStore, asked?: ObjectLock): Promise<Destination> {
  const lock = await to.lockToUse(asked);
  // Every object this copy writes is locked at least until this date's retain-until.
  const since = Date.now();
  /** Snapshots that name an object the bucket held already, whose retain-until is not known here. */
  const reusing = new Set<string>();
  return {
    async* held() {
      for await (const page of to.listDataPages()) for (const o of page) yield [keyOf(o), ''];
    },
    async put(id, line, bytes) {
      if (!bytes) reusing.add(id);
      else await to.putData(line.sha256, line.size, bytes, lock);
      return { now: '', finished: '' };
    },
    // A snapshot of new objects only is locked until their date; one that reuses objects gets no
    // marker, and the next forget extends all its objects. The manifest is sent from memory outside
    // the heap (a Buffer), with its Content-MD5, as every object is.
    finish: async (id, manifest, doc) => to.putSnapshot(id, manifest, doc, lock, lock && !reusing.has(id) ? retainUntil(lock, since) : undefined),
    abort: async () => undefined,
    setLatest: (id) => to.writeLatest(id),
  };
}

function folderDestination(to: ArchiveStore): Destination {
  const archive = to.where;
  return {
    // Every file the folder archive holds, oldest snapshot first: linked rather than written again.
    async* held() {
      for (const snapshot of (await to.listSnapshots()).snapshots) {
        const manifest = await openManifestInOrder(snapshot.dir).catch(() => null);
        if (!manifest) continue;
        try {
          for await (const { line } of manifest.lines()) yield [keyOf(line), join(snapshot.dir, line.path)];
        } finally {
          await manifest.close();
        }
      }
    },
    async put(id, line, bytes, from) {
      const path = join(partialDir(archive, id), line.path);
      const finished = join(snapshotDir(archive, id), line.path);
      await mkdir(dirname(path), { recursive: true });
      if (bytes) {
        const temp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
        await writeFile(temp, bytes);
        await rename(temp, path);
        return { now: path, finished };
      }
      await rm(path, { force: true });
      await link(from!, path).catch(async (error: unknown) => {
        // A file system without hard links, or the link limit reached: a copy.
        if (!['EXDEV', 'EPERM', 'EMLINK', 'ENOTSUP'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
        await copyFile(from!, path);
      });
      return { now: path, finished };
    },
    async finish(id, manifest, doc) {
      const dir = partialDir(archive, id);
      await mkdir(dir, { recursive: true });
      await copyFile(manifest, join(dir, MANIFEST_NAME));
      await writeFile(join(dir, SNAPSHOT_FILE), doc);
      await rename(dir, snapshotDir(archive, id));
    },
    abort: (id) => rm(partialDir(archive, id), { recursive: true, force: true }),
    setLatest: (id) => writeLatest(archive, id),
  };
}
