/**
 * An export into a bucket archive (DESIGN.md section 13), as the export run sees its target
 * (src/stages/export/target.ts). The previous snapshot's manifest is read from the bucket; a file
 * whose key and `updated_at` match it is taken over without a request; any other is downloaded
 * into memory (files are at most 5 MB), checked, and uploaded as the object its sha256 names,
 * unless the bucket holds it already: nothing is staged on local disk. The snapshot is written at
 * the end, manifest first and snapshot.json last, then `latest`. A run stopped or killed before
 * leaves no snapshot, only `snapshots/<id>/started.json`: the next run then lists `data/` once and
 * uploads only what is missing.
 */
import { dirname } from 'node:path';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { manifestKey, type ManifestLine } from '../../sinks/manifest.js';
import { LineFile } from '../../sinks/line-file.js';
import { writeSortedManifest } from '../../sinks/manifest-sort.js';
import { makeTempDir } from '../../util/temp-dir.js';
import type { EntryWriter, ExportSink } from '../../sinks/sink.js';
import { SourceMismatchError, sameSource, sourceLineText, type ExportSource } from '../../sinks/source.js';
import type { ExportRecorder } from '../../stages/export/record.js';
import type { ExportTarget, OpenedSink } from '../../stages/export/target.js';
import { digestOf, type FileDigest } from '../../util/hash-file.js';
import type { TargetLock } from '../../util/target-lock.js';
import { DEFAULT_MAX_DELETE, tooManyDeleted, type MaxDelete, type SnapshotInfo } from '../build.js';
import { isAccepted, nextSnapshotId, type SnapshotDoc } from '../store.js';
import type { ObjectLock } from './address.js';
import { retainUntil } from './s3.js';
import type { BucketStore } from './store.js';
import type { ManifestFile } from '../archive-store.js';
import { ManifestIndex } from '../manifest-index.js';
import { ShaSizes } from './sha-sizes.js';

/** Writes each file into memory, and on commit into the bucket as its content object. */
class BucketSink implements ExportSink {
  /** This run's lines, appended to a temporary file as they come and sorted at the end (issue 46). */
  readonly lines: LineFile;
  /** Content objects uploaded by this run, and their bytes. */
  uploaded = { objects: 0, bytes: 0 };

  constructor(readonly target: string, linesFile: string, private readonly put: (digest: FileDigest, bytes: Buffer) => Promise<void>) {
    this.lines = new LineFile(linesFile);
  }

  intactFromEarlierRun(): Promise<ReadonlyMap<string, ManifestLine>> {
    return Promise.resolve(new Map());
  }

  /** Nothing is intact here: whatever it is given (nothing) is not kept. */
  async keep(lines: Iterable<ManifestLine> | AsyncIterable<ManifestLine>): Promise<ManifestLine[]> {
    const notKept: ManifestLine[] = [];
    for await (const line of lines) notKept.push(line);
    return notKept;
  }

  open(): Promise<EntryWriter> {
    let chunks: Buffer[] = [];
    return Promise.resolve({
      write: (chunk: Buffer) => {
        chunks.push(chunk);
        return undefined;
      },
      restart: async () => {
        chunks = [];
      },
      commit: async () => {
        const bytes = Buffer.concat(chunks);
        chunks = [];
        const digest = digestOf([bytes]);
        await this.put(digest, bytes);
        return digest;
      },
      abort: async () => {
        chunks = [];
      },
    });
  }

  record(line: ManifestLine): Promise<void> {
    this.lines.add(line);
    return Promise.resolve();
  }

  // The snapshot is written by the target as it finishes: nothing of it is written before.
  finish(): Promise<void> {
    return Promise.resolve();
  }

  pause(): Promise<void> {
    return Promise.resolve();
  }

  abort(): Promise<void> {
    return Promise.resolve();
  }

  letGo(): Promise<void> {
    return Promise.resolve();
  }
}

export interface BucketTargetOptions {
  pipeline: string;
  maxDelete?: MaxDelete;
  /** Object Lock asked for (`lock:`), else the one the archive records. */
  lock?: ObjectLock;
  /** The archive as a refusal names it (default its address). */
  shown?: string;
}

export class BucketTarget implements ExportTarget<SnapshotInfo> {
  private sink!: BucketSink;
  private id = '';
  private readonly startedAt = new Date();
  /** The previous snapshot: its manifest downloaded to a temporary file, its lines looked up there (issue 46). */
  private previous: { id: string; doc: SnapshotDoc | null; lines: ManifestIndex; file: ManifestFile; lockedUntil: Date | null } | null = null;
  /**
   * The objects the bucket holds, with their sizes: those the previous snapshot names, those an
   * interrupted run may have left (when there is one), and this run's.
   */
  private readonly held = new ShaSizes();
  private lock: ObjectLock | undefined;
  /** Files taken over from the previous snapshot, and their bytes: counted, not kept. */
  private linked = { files: 0, bytes: 0 };
  /** The temporary folder of this run's lines and manifest. */
  private spool: string | null = null;
  private source: ExportSource | undefined;
  /** Ids of snapshots interrupted runs left unfinished. */
  private unfinished: string[] = [];

  /**
   * `archiveLock` is the lock of the archive the run holds. A content object is written under its sha256 with a
   * conditional write, so one written after the lock was lost harms nothing: uploads look only at
   * the lock's signal, which its heartbeat aborts once another run holds it (a read of the lock per
   * upload would double the run's requests); the snapshot and `latest` are written after a read.
   */
  constructor(readonly store: BucketStore, private readonly options: BucketTargetOptions, private readonly archiveLock: TargetLock | undefined) {}

  async open(source: ExportSource): Promise<OpenedSink> {
    this.source = source;
    const store = this.store;
    const ids = await store.listIds();
    this.unfinished = [...ids].filter(([, o]) => !o.doc && o.started).map(([id]) => id);
    // `latest` names a finished snapshot or nothing of use: a listing with none spares its read.
    const latest = [...ids.values()].some((o) => o.doc) ? await store.readLatest() : null;
    const entry = latest && ids.get(latest)?.doc ? await store.readEntry(latest) : null;
    // Under the lock, before anything is written: another company's files are never mixed in.
    // The latest snapshot's source is at hand; an archive whose latest records none is asked.
    const recorded = entry?.doc?.source ?? (ids.size > 0 ? await store.recordedSource() : null);
    if (recorded && !sameSource(recorded, source)) throw new SourceMismatchError(this.options.shown ?? store.where, recorded, source);
    if (latest && entry) {
      const file = await store.manifestFile(entry);
      const lines = await ManifestIndex.read([dirname(file.file)]);
      this.previous = { id: latest, doc: entry.doc, lines, file, lockedUntil: store.lockedUntil.get(latest) ?? null };
      for (const line of lines.values()) this.held.set(line.sha256, line.size);
    }
    // An interrupted run may have uploaded objects no snapshot names yet: one listing finds them.
    if (this.unfinished.length > 0) for await (const page of store.listDataPages()) for (const o of page) this.held.set(o.sha256, o.size);
    this.lock = await store.lockToUse(this.options.lock);
    this.id = nextSnapshotId(this.startedAt, [...ids.keys()]);
    // The source too: a run stopped before its snapshot still says whose files the archive holds.
    await store.putStarted(this.id, { pipeline: this.options.pipeline, started_at: this.startedAt.toISOString(), source });
    this.spool = await makeTempDir('bucket-run');
    this.sink = new BucketSink(`${store.where}/snapshots/${this.id}`, join(this.spool, 'lines.jsonl'), async (digest, bytes) => {
      if (this.held.get(digest.sha256) === digest.size) return;
      this.archiveLock?.signal.throwIfAborted();
      await store.putData(digest.sha256, digest.size, bytes, this.lock);
      this.held.set(digest.sha256, digest.size);
      this.sink.uploaded.objects += 1;
      this.sink.uploaded.bytes += digest.size;
    });
    return { sink: this.sink, intact: new Map() };
  }

  reference(): ReadonlyMap<string, ManifestLine> | null {
    return this.previous?.lines ?? null;
  }

  unlisted(): Promise<ManifestLine[]> {
    return Promise.resolve([]);
  }

  /** Unchanged files are the previous snapshot's lines, taken over without a request. */
  async link(lines: Iterable<ManifestLine>, recorder: ExportRecorder): Promise<ManifestLine[]> {
    for (const line of lines) {
      this.linked.files += 1;
      this.linked.bytes += line.size;
      await recorder.linked(line, `unchanged since snapshot ${this.previous!.id}; its object is named again`);
    }
    return [];
  }

  refetched(): string {
    return '';
  }

  /** A stopped run writes no snapshot: its objects stay for the next run, which finds them. */
  async pause(): Promise<undefined> {
    await this.letGoPrevious();
    return undefined;
  }

  /** Closes the previous snapshot's lines and removes their temporary file, and this run's. */
  private async letGoPrevious(): Promise<void> {
    this.previous?.lines.close();
    await this.previous?.file.release();
    this.sink?.lines.drop();
    if (this.spool) await rm(this.spool, { recursive: true, force: true });
    this.spool = null;
  }

  async finish(_sink: ExportSink, failed: number): Promise<SnapshotInfo> {
    const before: ReadonlyMap<string, ManifestLine> = this.previous?.lines ?? new Map<string, ManifestLine>();
    // Sorted through files and counted as written: a file the previous snapshot named is either
    // taken over (linked) or changed; one it did not is new; one of its own not written is deleted.
    this.sink.lines.close();
    const manifest = join(this.spool!, 'manifest.jsonl');
    let files = 0;
    let total = 0;
    let named = 0;
    await writeSortedManifest(this.sink.lines.path, manifest, (line) => {
      files += 1;
      total += line.size;
      if (before.has(manifestKey(line))) named += 1;
    }, this.source ? sourceLineText(this.source) : undefined);
    const fresh = files - named;
    const changed = Math.max(0, named - this.linked.files);
    const deleted = before.size - named;
    const newBytes = Math.max(0, total - this.linked.bytes);
    const counts = { files, new: fresh, changed, unchanged: this.linked.files, deleted, failed };
    const complete = failed === 0;
    const max = this.options.maxDelete ?? DEFAULT_MAX_DELETE;
    const held = before.size > 0 && tooManyDeleted(deleted, before.size, max)
      ? `${deleted} of the previous snapshot's ${before.size} files were deleted, more than max_delete (${max}) allows` : undefined;
    const doc: SnapshotDoc = {
      pipeline: this.options.pipeline, started_at: this.startedAt.toISOString(), finished_at: new Date().toISOString(), complete, counts,
      bytes: { total, new: newBytes }, previous: this.previous?.id ?? null, ...(held ? { held } : {}), ...(this.source ? { source: this.source } : {}),
    };
    try {
      await this.archiveLock?.assertHeld();
      // Objects taken over keep their own retain-until, which the previous snapshot's marker says;
      // a marker is written only when it is known.
      const lock = this.lock;
      let lockedUntil: Date | undefined;
      if (lock) {
        const own = retainUntil(lock, this.startedAt.getTime());
        const earlier = this.linked.files === 0 ? own : this.previous?.lockedUntil ?? null;
        if (earlier) lockedUntil = earlier < own ? earlier : own;
      }
      await this.store.putSnapshot(this.id, manifest, JSON.stringify(doc, null, 2), lock, lockedUntil);
    } finally {
      await this.letGoPrevious();
    }
    if (isAccepted(doc)) await this.store.writeLatest(this.id);
    // Unfinished snapshots of earlier runs are done with: their objects are named or left to forget.
    for (const id of this.unfinished) await this.store.bucket.remove([`snapshots/${id}/started.json`]).catch(() => undefined);
    return { id: this.id, path: this.sink.target, complete, ...(held ? { held } : {}), counts, bytes: { total, new: newBytes } };
  }

  abandon(): Promise<void> {
    return this.letGoPrevious();
  }

  discard(): Promise<void> {
    return this.letGoPrevious();
  }

  notes(): string[] {
    const { uploaded } = this.sink ?? { uploaded: { objects: 0, bytes: 0 } };
    return [`${uploaded.objects} objects uploaded (${uploaded.bytes} bytes); S3 requests: ${Object.entries(this.store.bucket.requests).map(([k, n]) => `${k} ${n}`).join(', ')}`];
  }
}
