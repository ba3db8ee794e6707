/**
 * What every `archive` command needs of an archive, wherever it lives (DESIGN.md sections 10 and
 * 13): a folder (store.ts) or an S3 bucket (bucket/store.ts). Reading is the same for both; how a
 * snapshot is written differs (hard links in a folder, content-addressed objects in a bucket), and
 * so do the commands that change one in place (forget, check's damaged files, repair). Which of
 * the two an address names is open-store.ts's to say.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { MANIFEST_NAME, type ManifestLine } from '../sinks/manifest.js';
import { openManifestInOrder, type OrderedManifest } from '../sinks/manifest-order.js';
import { SNAPSHOT_FILE, listSnapshots, pickSnapshot, readLatest, type SnapshotEntry } from './store.js';

/** A snapshot's manifest as a file on this machine, and how to let go of it once read. */
export interface ManifestFile {
  file: string;
  /** Removes a temporary copy (nothing for a folder archive's own file). */
  release(): Promise<void>;
}

export interface ArchiveStore {
  readonly kind: 'folder' | 'bucket';
  /** The folder's absolute path, or the bucket archive's `s3://` address: what messages name. */
  readonly where: string;
  /** Finished snapshots oldest first (each with its snapshot.json read), and the ids of unfinished ones. */
  listSnapshots(): Promise<{ snapshots: SnapshotEntry[]; partial: string[] }>;
  readLatest(): Promise<string | null>;
  /** `@ID`, `latest~N`...: as findSnapshot in store.ts. */
  findSnapshot(ref?: string): Promise<SnapshotEntry>;
  /** The snapshot.json as stored: what `archive copy` carries over unchanged, as it does the manifest. */
  readSnapshotDoc(snapshot: SnapshotEntry): Promise<string>;
  /** The manifest as stored, in a file on this machine (a bucket's is downloaded to a temporary one). */
  manifestFile(snapshot: SnapshotEntry): Promise<ManifestFile>;
  /** The stored bytes of one file of a snapshot, as they are (the caller checks them against the line). */
  readFile(snapshot: SnapshotEntry, line: ManifestLine): Promise<Buffer>;
  /** Lets go of connections. */
  close(): void;
}

/** The folder archive through the interface: the functions of store.ts. */
export class FolderStore implements ArchiveStore {
  readonly kind = 'folder';
  readonly where: string;
  constructor(dir: string) {
    this.where = resolve(dir);
  }
  listSnapshots() {
    return listSnapshots(this.where);
  }
  readLatest() {
    return readLatest(this.where);
  }
  async findSnapshot(ref?: string) {
    return pickSnapshot(this.where, (await this.listSnapshots()).snapshots, await this.readLatest(), ref);
  }
  readSnapshotDoc(snapshot: SnapshotEntry) {
    return readFile(join(snapshot.dir, SNAPSHOT_FILE), 'utf8');
  }
  async manifestFile(snapshot: SnapshotEntry): Promise<ManifestFile> {
    return { file: join(snapshot.dir, MANIFEST_NAME), release: async () => undefined };
  }
  readFile(snapshot: SnapshotEntry, line: ManifestLine) {
    return readFile(join(snapshot.dir, line.path));
  }
  close() {}
}

/**
 * A snapshot's manifest read in order a part at a time (manifest-order.ts), wherever the archive
 * lives: a bucket's is downloaded to a temporary file first. `close()` lets go of both.
 */
export async function openSnapshotManifest(store: ArchiveStore, snapshot: SnapshotEntry): Promise<OrderedManifest> {
  const file = await store.manifestFile(snapshot);
  try {
    const manifest = await openManifestInOrder(dirname(file.file), { file: file.file });
    return {
      ...manifest,
      close: async () => {
        await manifest.close();
        await file.release();
      },
    };
  } catch (error) {
    await file.release();
    throw error;
  }
}

/** How a command reaches a bucket archive: the `--s3-*` options, or a pipeline's `s3:` block. */
export interface BucketOptions {
  endpoint?: string;
  region?: string;
  force_path_style?: boolean;
  storage_class?: string;
  sse?: 'AES256' | 'aws:kms';
}
