/**
 * A snapshot archive in an S3 bucket (DESIGN.md section 13), under its prefix:
 *   data/<2 hex>/<sha256>              one object per distinct content, written once
 *   snapshots/<id>/started.json        written as a run begins: an id without snapshot.json is unfinished
 *   snapshots/<id>/manifest.jsonl      section 4's lines; `sha256` names the object
 *   snapshots/<id>/snapshot.json       written last: the snapshot exists once it does
 *   snapshots/<id>/locked-until-<ISO>  with Object Lock: until when every object it names is locked
 *   latest                             the id of the newest complete snapshot
 *   locks/archive                      the archive's lock (lock.ts)
 *   config.json                        what the archive is written with (its Object Lock), once set
 */
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { z } from 'zod';
import { MANIFEST_NAME, type ManifestLine } from '../../sinks/manifest.js';
import { LATEST_FILE, SNAPSHOT_FILE, SNAPSHOTS_DIR, parseSnapshotId, compareSnapshotIds, pickSnapshot, snapshotDocSchema, type SnapshotEntry } from '../store.js';
import type { ArchiveStore, BucketOptions, ManifestFile } from '../archive-store.js';
import { readSource, type ExportSource } from '../../sinks/source.js';
import { formatBucketAddress, objectLockSchema, parseBucketAddress, type ObjectLock } from './address.js';
import { Bucket, BucketError } from './s3.js';
import { makeTempDir } from '../../util/temp-dir.js';

export const DATA_DIR = 'data/';
export const STARTED_FILE = 'started.json';
export const CONFIG_FILE = 'config.json';
const LOCKED_UNTIL = 'locked-until-';

/** The object that holds the content of sha256 `sha256`. */
export const dataName = (sha256: string): string => `${DATA_DIR}${sha256.slice(0, 2)}/${sha256}`;

const configSchema = z.looseObject({ lock: objectLockSchema.optional() });
export type BucketConfig = z.infer<typeof configSchema>;

/** Snapshot.json objects read at once by a listing. */
const READS_AT_ONCE = 8;

/** What `snapshots/` holds of one id. */
interface IdObjects {
  doc: boolean;
  manifest: boolean;
  started: boolean;
  lockedUntil: Date | null;
}

export class BucketStore implements ArchiveStore {
  readonly kind = 'bucket';
  readonly where: string;
  /** From the last listing: until when each snapshot's objects are locked (with Object Lock). */
  readonly lockedUntil = new Map<string, Date>();

  private constructor(readonly bucket: Bucket) {
    this.where = formatBucketAddress(bucket.address);
  }

  static open(address: string, settings: BucketOptions = {}): BucketStore {
    return new BucketStore(new Bucket(parseBucketAddress(address), settings));
  }

  /** What `snapshots/` holds, by id, in one listing (a request per 1,000 objects). */
  async listIds(): Promise<Map<string, IdObjects>> {
    const ids = new Map<string, IdObjects>();
    for (const o of await this.bucket.list(`${SNAPSHOTS_DIR}/`)) {
      const [, id, file] = o.name.split('/');
      if (!id || !file || !parseSnapshotId(id)) continue;
      const seen = ids.get(id) ?? { doc: false, manifest: false, started: false, lockedUntil: null };
      if (file === SNAPSHOT_FILE) seen.doc = true;
      else if (file === MANIFEST_NAME) seen.manifest = true;
      else if (file === STARTED_FILE) seen.started = true;
      else if (file.startsWith(LOCKED_UNTIL)) {
        const until = new Date(file.slice(LOCKED_UNTIL.length));
        if (!Number.isNaN(until.getTime()) && (!seen.lockedUntil || until > seen.lockedUntil)) seen.lockedUntil = until;
      }
      ids.set(id, seen);
    }
    this.lockedUntil.clear();
    for (const [id, seen] of ids) if (seen.lockedUntil) this.lockedUntil.set(id, seen.lockedUntil);
    return ids;
  }

  snapshotDir(id: string): string {
    return `${this.where}/${SNAPSHOTS_DIR}/${id}`;
  }

  /** One snapshot's entry, its snapshot.json read. */
  async readEntry(id: string): Promise<SnapshotEntry> {
    const dir = this.snapshotDir(id);
    const bytes = await this.bucket.get(`${SNAPSHOTS_DIR}/${id}/${SNAPSHOT_FILE}`);
    if (!bytes) return { id, dir, doc: null, problem: `no readable ${SNAPSHOT_FILE}` };
    try {
      const parsed = snapshotDocSchema.safeParse(JSON.parse(bytes.toString('utf8')));
      if (parsed.success) return { id, dir, doc: parsed.data };
      const issue = parsed.error.issues[0];
      return { id, dir, doc: null, problem: `${SNAPSHOT_FILE}: ${issue?.path.join('.')}: ${issue?.message}` };
    } catch {
      return { id, dir, doc: null, problem: `${SNAPSHOT_FILE} is not JSON` };
    }
  }

  async listSnapshots(): Promise<{ snapshots: SnapshotEntry[]; partial: string[] }> {
    const ids = await this.listIds();
    const finished = [...ids].filter(([, o]) => o.doc).map(([id]) => id).sort(compareSnapshotIds);
    const partial = [...ids].filter(([, o]) => !o.doc && (o.started || o.manifest)).map(([id]) => id).sort(compareSnapshotIds);
    const limit = pLimit(READS_AT_ONCE);
    const snapshots = await Promise.all(finished.map((id) => limit(() => this.readEntry(id))));
    return { snapshots, partial };
  }

  async readLatest(): Promise<string | null> {
    const bytes = await this.bucket.get(LATEST_FILE);
    return bytes?.toString('utf8').trim() || null;
  }

  /**
   * Where the archive's files come from, as archiveSource says of a folder: the source of the
   * snapshot `latest` names, else of the newest snapshot that records one, else of an unfinished
   * run's started.json. Null for a new archive, or one made before sources were recorded. Two
   * requests when `latest` records one, as it does once a run has finished.
   */
  async recordedSource(): Promise<ExportSource | null> {
    const latest = await this.readLatest();
    if (latest) {
      const named = (await this.readEntry(latest)).doc?.source;
      if (named) return named;
    }
    const ids = await this.listIds();
    const newestFirst = [...ids.keys()].sort(compareSnapshotIds).reverse();
    for (const id of newestFirst.filter((i) => i !== latest && ids.get(i)!.doc)) {
      const source = (await this.readEntry(id)).doc?.source;
      if (source) return source;
    }
    for (const id of newestFirst.filter((i) => !ids.get(i)!.doc && ids.get(i)!.started)) {
      const bytes = await this.bucket.get(`${SNAPSHOTS_DIR}/${id}/${STARTED_FILE}`);
      let source: ExportSource | null = null;
      try {
        source = bytes ? readSource((JSON.parse(bytes.toString('utf8')) as { source?: unknown }).source) : null;
      } catch {
        // A started.json that is not JSON records nothing.
      }
      if (source) return source;
    }
    return null;
  }

  /** Whether the archive holds anything yet: `latest`, or any snapshot finished or begun. */
  async holdsAnything(): Promise<boolean> {
    return (await this.readLatest()) !== null || (await this.listIds()).size > 0;
  }

  async writeLatest(id: string): Promise<void> {
    await this.bucket.put(LATEST_FILE, `${id}\n`, { contentType: 'text/plain' });
  }

  async findSnapshot(ref?: string): Promise<SnapshotEntry> {
    return pickSnapshot(this.where, (await this.listSnapshots()).snapshots, await this.readLatest(), ref);
  }

  async readSnapshotDoc(snapshot: SnapshotEntry): Promise<string> {
    const doc = await this.bucket.get(`${SNAPSHOTS_DIR}/${snapshot.id}/${SNAPSHOT_FILE}`);
    if (!doc) throw new Error(`${snapshot.dir}/${SNAPSHOT_FILE} is missing`);
    return doc.toString('utf8');
  }

  /** The manifest downloaded into a temporary folder as it arrives, never held whole. */
  async manifestFile(snapshot: SnapshotEntry): Promise<ManifestFile> {
    const dir = await makeTempDir('bucket-manifest');
    const file = join(dir, MANIFEST_NAME);
    try {
      if (!(await this.bucket.getToFile(`${SNAPSHOTS_DIR}/${snapshot.id}/${MANIFEST_NAME}`, file))) throw new Error(`${snapshot.dir}/${MANIFEST_NAME} is missing`);
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
    return { file, release: () => rm(dir, { recursive: true, force: true }) };
  }

  async readFile(snapshot: SnapshotEntry, line: ManifestLine): Promise<Buffer> {
    const bytes = await this.bucket.get(dataName(line.sha256));
    if (!bytes) throw new Error(`${this.where}/${dataName(line.sha256)} is missing`);
    return bytes;
  }

  /** The content objects the archive holds, by sha256, a listing's page at a time (a request per 1,000). */
  async* listDataPages(): AsyncGenerator<{ sha256: string; size: number; modified: Date }[]> {
    for await (const page of this.bucket.listPages(DATA_DIR)) {
      const held: { sha256: string; size: number; modified: Date }[] = [];
      for (const o of page) {
        const sha256 = o.name.slice(o.name.lastIndexOf('/') + 1);
        if (/^[0-9a-f]{64}$/.test(sha256) && o.name === dataName(sha256)) held.push({ sha256, size: o.size, modified: o.modified });
      }
      yield held;
    }
  }

  async readConfig(): Promise<BucketConfig> {
    const bytes = await this.bucket.get(CONFIG_FILE);
    if (!bytes) return {};
    const parsed = configSchema.safeParse(JSON.parse(bytes.toString('utf8')));
    if (!parsed.success) throw new Error(`${this.where}/${CONFIG_FILE}: ${parsed.error.issues[0]?.message}`);
    return parsed.data;
  }

  /**
   * The Object Lock a writer applies: the one asked for (recorded in config.json the first time, or
   * when it changes), else the one the archive records. A bucket without Object Lock refuses the
   * first locked write with a message that says so.
   */
  async lockToUse(asked?: ObjectLock): Promise<ObjectLock | undefined> {
    const config = await this.readConfig();
    if (!asked) return config.lock;
    if (config.lock?.mode !== asked.mode || config.lock.days !== asked.days) {
      await this.bucket.put(CONFIG_FILE, JSON.stringify({ ...config, lock: asked }, null, 2), { contentType: 'application/json' }).catch((error: unknown) => {
        throw error instanceof BucketError && /InvalidRequest|InvalidBucketState/.test(error.code)
          ? new Error(`${this.where}: lock: needs a bucket made with Object Lock enabled (${error.code})`, { cause: error })
          : error;
      });
    }
    return asked;
  }

  /**
   * Writes one content object, after checking `bytes` against the sha256 and size its manifest
   * line will name; the Content-MD5 sent with it has the server check that they arrived whole.
   */
  async putData(sha256: string, size: number, bytes: Buffer, lock?: ObjectLock): Promise<void> {
    const actual = createHash('sha256').update(bytes).digest('hex');
    if (actual !== sha256 || bytes.length !== size) {
      throw new Error(`content for ${dataName(sha256)} is ${bytes.length} bytes with sha256 ${actual}, not ${size} bytes with ${sha256}; not stored`);
    }
    await this.bucket.put(dataName(sha256), bytes, { ifAbsent: true, ...(lock ? { lock } : {}) });
  }

  /** Marks a run's snapshot as begun: until its snapshot.json is written it is unfinished. */
  async putStarted(id: string, what: Record<string, unknown>): Promise<void> {
    await this.bucket.put(`${SNAPSHOTS_DIR}/${id}/${STARTED_FILE}`, JSON.stringify(what), { contentType: 'application/json' });
  }

  /**
   * Writes a snapshot: its manifest, then (last) its snapshot.json. With `lock`, both are locked
   * as the data objects are, and a marker says until when the objects it names stay locked.
   */
  /** Writes a snapshot: its manifest (the file at `manifestFile`, sent as it is read), then snapshot.json. */
  async putSnapshot(id: string, manifestFile: string, doc: string, lock?: ObjectLock, lockedUntil?: Date): Promise<void> {
    const base = `${SNAPSHOTS_DIR}/${id}`;
    await this.bucket.putFile(`${base}/${MANIFEST_NAME}`, manifestFile, { contentType: 'application/x-ndjson', ...(lock ? { lock } : {}) });
    if (lock && lockedUntil) await this.markLockedUntil(id, lockedUntil);
    await this.bucket.put(`${base}/${SNAPSHOT_FILE}`, doc, { contentType: 'application/json', ...(lock ? { lock } : {}) });
  }

  async markLockedUntil(id: string, until: Date): Promise<void> {
    await this.bucket.put(`${SNAPSHOTS_DIR}/${id}/${LOCKED_UNTIL}${until.toISOString()}`, '');
    this.lockedUntil.set(id, until);
  }

  /** Removes what an unfinished snapshot left in `snapshots/` (its objects in data/ stay, for forget). */
  async removeUnfinished(id: string, objects: IdObjects): Promise<void> {
    const names = [...(objects.started ? [STARTED_FILE] : []), ...(objects.manifest ? [MANIFEST_NAME] : [])].map((f) => `${SNAPSHOTS_DIR}/${id}/${f}`);
    await this.bucket.remove(names);
  }

  close(): void {
    this.bucket.destroy();
  }
}
