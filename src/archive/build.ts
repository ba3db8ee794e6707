/**
 * One run of the snapshot archive (DESIGN.md section 10): the snapshot is built as
 * `snapshots/<id>.partial/`, an ordinary export folder written by the folder sink; files unchanged
 * since the previous snapshot (same key and updated_at) are hard-linked from it instead of
 * downloaded; at the end `snapshot.json` is written, the folder renamed to `snapshots/<id>/`, and
 * `latest` pointed at it when the snapshot is complete. Nothing here writes into a file of an
 * earlier snapshot: links are made, never opened for writing, and a changed file is written under
 * a temporary name and renamed over its link (FolderSink).
 */
import { chmod, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Linker, type LinkItem } from './linker.js';
import { damagedStill } from './damaged.js';
import { ManifestIndex } from './manifest-index.js';
import { readWrites, trimWrites, type WriteWindows } from './writes.js';
import {
  SNAPSHOT_FILE, isAccepted, listSnapshots, nextSnapshotId, partialDir, snapshotDir, writeLatest,
  type SnapshotCounts, type SnapshotDoc, type SnapshotEntry,
} from './store.js';
import { MANIFEST_NAME, checkManifestLine, manifestKey, type ManifestLine } from '../sinks/manifest.js';
import { readLines } from '../util/line-reader.js';
import { removeTree } from '../util/remove-tree.js';
import { PathHashes } from '../util/safe-name.js';
import type { ExportSource } from '../sinks/source.js';
import { TargetRefusedError } from '../sinks/target-error.js';

/** What a run made of its snapshot (`ExportResult.snapshot`). */
export interface SnapshotInfo {
  /** The snapshot's id: the UTC time its run started, `YYYY-MM-DDTHHMMSS`. */
  id: string;
  /** Its folder: `snapshots/<id>`, or `snapshots/<id>.partial` when the run was stopped. */
  path: string;
  /** Every listed file is in it. */
  complete: boolean;
  /** Why it was held back (too many files deleted since the snapshot before): `latest` was not moved. */
  held?: string;
  /** Its files, against the snapshot before it. */
  counts: SnapshotCounts;
  /** The bytes of its files, and of those not taken over from the snapshot before. */
  bytes: {
    /** Every file's bytes. */
    total: number;
    /** New and changed files' bytes (and unchanged ones', where they were copied). */
    new: number;
  };
}

/**
 * Threads that make the folders and links of unchanged files. The kernel makes the folders of one
 * parent one at a time, so a second thread helps only an archive of two file parts or more (the
 * linker gives each parent folder to one thread), and more than two would take the cores the
 * downloads of the changed files need.
 */
const LINK_THREADS = 2;
/**
 * How many of the previous snapshot's files a run may find deleted before it holds its snapshot
 * back: a count, or a share of them such as `50%` (a pipeline's `max_delete`). As rclone's
 * `--max-delete` guards a sync: a listing that suddenly holds far fewer files (another company's,
 * or a part of the service switched off) is more often a mistake than a night's deletions.
 */
export type MaxDelete = number | `${number}%`;
export const DEFAULT_MAX_DELETE: MaxDelete = '50%';

/** Why deleting `deleted` of `before` files is more than `max` allows, or null. */
export function tooManyDeleted(deleted: number, before: number, max: MaxDelete): boolean {
  return typeof max === 'number' ? deleted > max : deleted > (before * Number.parseFloat(max)) / 100;
}

/**
 * Unchanged files given the linker at once: enough that its threads stay busy between parts, few
 * enough that their lines are a megabyte or two. A part's lines live through young collections
 * into the old generation, which an export lets grow to twice what lives (runtime.ts): parts of
 * 16,384 lines took it from 27 to 54 MB at 200,000 unchanged files.
 */
const LINES_LINKED_AT_ONCE = 4096;

/** Unused files removed at once: enough to keep the thread pool busy, few enough to stay small. */
const REMOVALS_AT_ONCE = 64;

export class SnapshotBuild {
  /** The latest version of each file in the snapshots this one is compared with, on disk. */
  private earlier = new ManifestIndex();
  /** Whether no two files of `earlier` have one path (EarlyDownloads). */
  pathsUnique = true;
  private deleted = 0;
  /** The snapshot the deletions are counted from: the newest one neither incomplete nor held back. */
  private baseline: string | null = null;
  /** Takes unchanged files over on threads of its own. */
  private readonly linker: Linker;
  /** Where this run's files come from, recorded in `snapshot.json` (the export sets it once it has its client). */
  source: ExportSource | undefined;

  private constructor(
    readonly archive: string,
    readonly pipeline: string,
    readonly id: string,
    readonly startedAt: Date,
    /** The newest finished snapshot, which this one is compared with; null for the first. */
    readonly previous: string | null,
    /** The id of the `.partial` an earlier run left and this run continues, if any. */
    readonly resumed: string | null,
    writes?: WriteWindows,
    /** Files of earlier snapshots `archive check --read-data` found damaged, by path: downloaded, not linked. */
    private readonly damaged: ReadonlySet<string> = new Set(),
  ) {
    this.linker = new Linker(partialDir(archive, id), LINK_THREADS, writes);
  }

  /** The folder being built. */
  get dir(): string {
    return partialDir(this.archive, this.id);
  }

  /**
   * The latest version of each file in `finished` (snapshots, oldest first) from the newest
   * complete one on: what a new snapshot is compared with. `onTurn` gets the lines as they are read.
   */
  private async readEarlier(finished: SnapshotEntry[], onTurn?: (lines: ManifestLine[], dir: string) => void): Promise<void> {
    // A snapshot held back counts as an incomplete one: its deletions are counted again.
    const from = Math.max(0, finished.findLastIndex((s) => isAccepted(s.doc)));
    this.baseline = finished[from]?.id ?? null;
    // A snapshot whose manifest cannot be read gives nothing to link: its files are downloaded.
    this.earlier = await ManifestIndex.read(finished.slice(from).map((s) => s.dir), onTurn);
    this.pathsUnique = this.earlier.pathsUnique();
  }

  /**
   * Starts a snapshot of `archive` (whose lock the caller holds). A `.partial` an interrupted run
   * left is continued, renamed to this run's id: its files whose size and sha256 match its
   * manifest are kept by the folder sink. Unchanged files come from the newest complete snapshot,
   * or from a newer incomplete one that holds them. Called as the run starts, so that the
   * earlier manifests are read while the service lists the files.
   *
   * A new snapshot (not one continued from a `.partial`) starts making the folders of the earlier
   * snapshots' files as their manifests are read: most files are unchanged, and the folders are
   * most of what taking one over costs. The files are linked only once the listing says they are
   * unchanged, each recorded as its batch lands, so that the `.partial` a killed run leaves holds
   * only files its manifest lists (DESIGN.md section 8). The folders left empty are removed when
   * the snapshot is finished, paused or discarded.
   */
  static async open(archive: string, pipeline: string, now = new Date()): Promise<SnapshotBuild> {
    const { snapshots, partial } = await listSnapshots(archive);
    const finished = snapshots.filter((s) => s.doc !== null);
    const owner = finished.at(-1)?.doc?.pipeline;
    if (owner !== undefined && owner !== pipeline) {
      // Retention and the unchanged files go by the archive's snapshots: another pipeline's would
      // count as this one's, and its files as deleted.
      throw new TargetRefusedError(`${archive} holds the snapshots of pipeline "${owner}", not of "${pipeline}": each pipeline needs an archive of its own. Name another archive, or, if the pipeline was renamed, give it its name "${owner}" back`);
    }
    const id = nextSnapshotId(now, [...snapshots.map((s) => s.id), ...partial]);
    const resumed = partial.at(-1) ?? null;
    if (resumed !== null) {
      await rename(partialDir(archive, resumed), partialDir(archive, id));
    }
    // When the archive's commands wrote in it, and what a check found damaged: such files are
    // downloaded again rather than linked forward.
    const oldest = finished[0]?.doc ? Date.parse(finished[0].doc.started_at) : Number.NaN;
    if (Number.isFinite(oldest)) await trimWrites(archive, oldest).catch(() => undefined);
    const writes = await readWrites(archive);
    const damaged = new Set((await damagedStill(archive, (snapshot) => snapshotDir(archive, snapshot))).keys());
    const build = new SnapshotBuild(archive, pipeline, id, now, finished.at(-1)?.id ?? null, resumed, writes, damaged);
    const ahead = resumed === null ? build.linker.ahead({ links: false }) : null;
    try {
      await build.readEarlier(finished, ahead ? (lines, dir) => ahead.add(lines.map((line) => ({ root: dir, from: line.path, to: line.path, size: line.size }))) : undefined);
    } finally {
      ahead?.end();
    }
    return build;
  }

  /**
   * The run ends without finishing or pausing its snapshot (the listing failed, it was stopped
   * while the service listed, or a fatal error came): the files placed ahead that its manifest
   * does not list go, then the folders that hold nothing, and a new snapshot's folder if that
   * leaves it empty. Files the manifest lists, and a `.partial` continued from an earlier run,
   * stay for the next run. With `whole`, a new snapshot's folder goes with everything in it (its
   * run downloaded files before it could list them all, and leaves the archive as it was).
   */
  async discard(whole = false): Promise<void> {
    if (whole && this.resumed === null) {
      // The threads placing ahead finish first: they would make folders in what is removed.
      await this.linker.placedAhead().catch(() => undefined);
      await this.linker.release();
      this.earlier.close();
      await removeTree(this.dir);
      return;
    }
    // What this run's folder sink left in the manifest (lines an interrupted run left were checked
    // when it started), read without counting it.
    await this.readOwnManifest((line) => this.noteUsed(line)).catch(() => undefined);
    await this.removeUnused(true);
    // An open manifest of an earlier snapshot would keep its file system busy after a failed run.
    this.earlier.close();
    if (this.resumed === null) await rmdir(this.dir).catch(() => undefined);
  }

  /** The lines of the earlier snapshots, by key, for planning paths and what to link; not to be changed. */
  reference(): ReadonlyMap<string, ManifestLine> {
    return this.earlier;
  }

  /** The key each moved file had in the earlier snapshots, by its key now (export-plan.ts, `realign`). */
  private movedFrom: ReadonlyMap<string, string> = new Map();

  /** The earlier line of the file of `key`, under the key it had there if its record moved. */
  private earlierKey(key: string): string {
    return this.movedFrom.size === 0 ? key : this.movedFrom.get(key) ?? key;
  }

  /**
   * Notes what the service listed: `listed` of the earlier snapshot's files (planExport's
   * `previousListed`, counted in `realign`'s lines), the others deleted; `movedFrom` holds the
   * earlier key of each file whose record moved, by its key now.
   */
  noteListing(listed: number, movedFrom?: ReadonlyMap<string, string>): void {
    if (movedFrom) this.movedFrom = movedFrom;
    // realign gives each earlier line one key: as many lines as the earlier snapshot had.
    this.deleted = this.earlier.size - listed;
  }

  /**
   * Links (or copies) each line's file from the earlier snapshot into this one, calling `onPlaced`
   * for each. Answers the lines whose file could not be taken over (gone, another size, not a
   * plain file, or behind a link): they are downloaded instead. Stops starting when `signal` is
   * aborted; lines not reached are in neither list. Files placed ahead are recorded from when
   * `after` settles (Linker.run).
   */
  async linkUnchanged(lines: Iterable<ManifestLine>, onPlaced: (line: ManifestLine) => Promise<void>, signal?: AbortSignal, after?: Promise<unknown>): Promise<ManifestLine[]> {
    const refused: ManifestLine[] = [];
    // A part at a time, so that the lines and their items are never all held at once.
    let part: ManifestLine[] = [];
    for (const line of lines) {
      part.push(line);
      if (part.length < LINES_LINKED_AT_ONCE) continue;
      refused.push(...(await this.linkPart(part, onPlaced, signal, after)));
      part = [];
      if (signal?.aborted) return refused;
    }
    if (part.length > 0) refused.push(...(await this.linkPart(part, onPlaced, signal, after)));
    return refused;
  }

  /** `linkUnchanged` of one part of the lines. */
  private async linkPart(lines: ManifestLine[], onPlaced: (line: ManifestLine) => Promise<void>, signal?: AbortSignal, after?: Promise<unknown>): Promise<ManifestLine[]> {
    const refused: ManifestLine[] = [];
    const items: (LinkItem & { line: ManifestLine })[] = [];
    if (!this.earlier.layered) {
      // One snapshot read: each line (of `realign`'s, as planExport gives them) is an earlier line or
      // a copy of one with its record's new index, at the same path and size, in that snapshot.
      const root = this.earlier.newestDir;
      for (const line of lines) items.push({ root, from: line.path, to: line.path, size: line.size, line });
    } else {
      for (const line of lines) {
        const key = this.earlierKey(manifestKey(line));
        const from = this.earlier.get(key);
        if (from) items.push({ root: this.earlier.dirOf(key)!, from: from.path, to: line.path, size: line.size, line });
        else refused.push(line);
      }
    }
    if (this.damaged.size > 0) {
      const sound = items.filter((item) => !this.damaged.has(join(item.root, item.from)));
      if (sound.length < items.length) for (const item of items) if (this.damaged.has(join(item.root, item.from))) refused.push(item.line);
      items.splice(0, items.length, ...sound);
    }
    await this.linker.run(items, async (placed, notPlaced) => {
      for (const item of notPlaced) refused.push(item.line);
      await Promise.all(placed.map((item) => onPlaced(item.line)));
    }, signal, after);
    return refused;
  }

  /** Whether unchanged files had to be copied (the report says so). */
  get copied(): boolean {
    return this.linker.copying;
  }

  /**
   * Ends the run once the folder sink has written the manifest: counts what the snapshot holds
   * against the earlier one, writes `snapshot.json`, renames the folder into place and, when
   * complete, points `latest` at it. `failed` files keep the snapshot incomplete. One that finds
   * more files deleted than `maxDelete` allows is held back: finished, but `latest` stays.
   */
  async finish(failed: number, maxDelete: MaxDelete = DEFAULT_MAX_DELETE): Promise<SnapshotInfo> {
    const { counts, bytes } = this.tally(failed);
    await this.removeUnused(true);
    this.earlier.close();
    const complete = failed === 0;
    const held = complete && tooManyDeleted(counts.deleted, this.earlier.size, maxDelete)
      ? `${counts.deleted} of the ${this.earlier.size} files of snapshot ${this.baseline} are not listed any more, more than max_delete ${maxDelete} allows`
      : undefined;
    const doc: SnapshotDoc = {
      pipeline: this.pipeline,
      started_at: this.startedAt.toISOString(),
      finished_at: new Date().toISOString(),
      complete,
      counts,
      bytes,
      previous: this.previous,
      unchanged_files: this.copied ? 'copies' : 'hard links',
      ...(held ? { held } : {}),
      ...(this.source ? { source: this.source } : {}),
    };
    // Its manifest and snapshot.json read-only too, as its files are.
    await chmod(join(this.dir, MANIFEST_NAME), 0o444).catch(() => undefined);
    await writeFile(join(this.dir, SNAPSHOT_FILE), `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o444 });
    const final = snapshotDir(this.archive, this.id);
    await rename(this.dir, final);
    if (complete && !held) await writeLatest(this.archive, this.id);
    return { id: this.id, path: final, complete, counts, bytes, ...(held ? { held } : {}) };
  }

  /**
   * A stopped run: the `.partial` stays for the next run, which continues it, with the files its
   * manifest lists; folders made ahead that hold none go.
   */
  async pause(failed: number): Promise<SnapshotInfo> {
    const { counts, bytes } = this.tally(failed);
    await this.removeUnused(false);
    this.earlier.close();
    return { id: this.id, path: this.dir, complete: false, counts, bytes };
  }

  /**
   * The folders of the manifest's files, with those above them (`noteUsed`), as hashes: an archive
   * of 100,000 members has a folder a member and file part. A folder left empty whose hashes a used
   * one has stays, empty.
   */
  private usedFolders = new PathHashes();

  /** Notes the folders of a line of this snapshot's manifest, which stay. */
  private noteUsed(line: Pick<ManifestLine, 'path'>): void {
    for (let folder = folderOf(line.path); folder !== '.' && this.usedFolders.add(folder); folder = folderOf(folder));
  }

  /**
   * Removes what the snapshot does not use: with `files`, in a continued `.partial`, the files an
   * earlier run placed that the manifest does not list (those of members since deleted, or of
   * files that moved); then the folders made ahead that hold nothing, deepest first. The earlier
   * snapshots' paths, read again from their manifests, are the candidates: folders were made ahead
   * for them alone. Only paths the manifest does not list go, and rmdir removes only an empty folder.
   */
  private async removeUnused(files: boolean): Promise<void> {
    // No run links after this: the threads that made folders ahead are done.
    if (this.resumed === null) await this.linker.placedAhead().catch(() => undefined);
    await this.linker.release();
    if (files && this.resumed !== null) await this.removeStray();
    // Folders of the file parts and the like, above the members' folders: few, removed last.
    const above = new Set<string>();
    let last = '';
    for await (const path of this.earlier.paths()) {
      const folder = folderOf(path);
      if (folder === last || folder === '.') continue;
      last = folder;
      for (let up = folderOf(folder); up !== '.' && !above.has(up); up = folderOf(up)) if (!this.usedFolders.has(up)) above.add(up);
      if (this.usedFolders.has(folder)) continue;
      await rmdir(join(this.dir, folder)).catch((error: NodeJS.ErrnoException) => {
        // One that still holds a folder of another path's is tried again with those above.
        if (error.code === 'ENOTEMPTY' || error.code === 'EEXIST') above.add(folder);
      });
    }
    for (const folder of [...above].sort((a, b) => b.length - a.length)) await rmdir(join(this.dir, folder)).catch(() => undefined);
  }

  /** In a continued `.partial`: removes the earlier snapshots' files the manifest does not list. */
  private async removeStray(): Promise<void> {
    const used = new PathHashes();
    await this.readOwnManifest((line) => used.add(line.path)).catch(() => undefined);
    let batch: string[] = [];
    const flush = async (): Promise<void> => {
      await Promise.all(batch.map((path) => rm(join(this.dir, path), { force: true }).catch(() => undefined)));
      batch = [];
    };
    for await (const path of this.earlier.paths()) {
      if (used.has(path)) continue;
      batch.push(path);
      if (batch.length >= REMOVALS_AT_ONCE) await flush();
    }
    await flush();
  }

  /** What the snapshot holds against the earlier one, counted as the folder sink writes the final manifest (`noteLine`). */
  private counted = { files: 0, new: 0, changed: 0, unchanged: 0, repaired: 0, bytesTotal: 0, bytesNew: 0 };

  /**
   * Given each line of the final manifest as the folder sink writes it, once the files are all
   * placed: counts the snapshot as it goes, so that neither its lines nor a second pass over them
   * are needed at the end of the run.
   */
  readonly noteLine = (line: ManifestLine): void => {
    const c = this.counted;
    c.files += 1;
    c.bytesTotal += line.size;
    this.noteUsed(line);
    const key = manifestKey(line);
    const before = this.earlier.get(this.earlierKey(key));
    if (before && before.updated_at === line.updated_at && before.sha256 === line.sha256) {
      // Unchanged at the service, but its earlier copy was missing or damaged: a fresh one.
      if (this.refetched.has(key)) {
        c.repaired += 1;
        c.bytesNew += line.size;
        return;
      }
      c.unchanged += 1;
      if (this.copied) c.bytesNew += line.size;
      return;
    }
    c[before ? 'changed' : 'new'] += 1;
    c.bytesNew += line.size;
  };

  /** Unchanged files downloaded again, their link refused (a damaged earlier snapshot): counted `repaired`. */
  private readonly refetched = new Set<string>();

  noteRefetched(keys: Iterable<string>): void {
    for (const key of keys) this.refetched.add(key);
  }

  private tally(failed: number): { counts: SnapshotCounts; bytes: { total: number; new: number } } {
    const c = this.counted;
    const counts: SnapshotCounts = { files: c.files, new: c.new, changed: c.changed, unchanged: c.unchanged, repaired: c.repaired, deleted: this.deleted, failed };
    return { counts, bytes: { total: c.bytesTotal, new: c.bytesNew } };
  }

  /** Each line of this snapshot's manifest as this run's folder sink left it, read a block at a time. */
  private async readOwnManifest(onLine: (line: ManifestLine) => void): Promise<void> {
    const into = { problems: [] as string[] };
    for await (const { bytes, number } of readLines(join(this.dir, MANIFEST_NAME))) {
      const line = checkManifestLine(bytes.toString('utf8'), number, into);
      if (line) onLine(line);
    }
  }
}

/** The folder a path inside the snapshot is in ('.' for the top). */
function folderOf(path: string): string {
  const at = path.lastIndexOf('/');
  return at < 0 ? '.' : path.slice(0, at);
}
