/**
 * The folder sink: every file is written under a temporary name in `.wds-tmp/` and renamed into
 * place when complete, so a killed run leaves no half file; the manifest grows by one line per
 * file as it lands, so a rerun knows what is already there, and is rewritten in order at the end.
 */
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, open, readdir, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { removeEmptyDirs, type EntryWriter, type ExportSink } from './sink.js';
import { rest } from './zip-output.js';
import { isLockFileName } from '../util/target-lock.js';
import { digestOf, hashFile } from '../util/hash-file.js';
import { LinkCheck, MANIFEST_NAME, checkManifestLine, formatLine, manifestKey, type ManifestLine } from './manifest.js';
import { syncFolder, writeSortedManifest } from './manifest-sort.js';
import { openManifestInOrder, type OrderedManifest } from './manifest-order.js';
import { IntactLines } from './intact-lines.js';
import type { ManifestIndex } from './manifest-index.js';
import { readLines } from '../util/line-reader.js';
import { mapInOrder } from '../util/map-in-order.js';
import { sourceLineText, type ExportSource } from './source.js';

const TMP = '.wds-tmp';
/** A file's bytes are written in batches of this size (the last one smaller). */
const FLUSH_BYTES = 256 * 1024;
const DONE: Promise<void> = Promise.resolve();
/** Folders remembered as made: an attachment export has one a member, 100,000 of them in a company of that size. */
const RECENT_FOLDERS = 4096;
/** Files of an earlier run checked at once: enough to keep the hashing thread and the thread pool busy. */
const EARLIER_CHECKS = 8;

/**
 * The names in `dir` that no export wrote, when it is no export folder: it holds names other than
 * hidden ones and no manifest. An export there could replace a file of the user's with one of the
 * service's at the same path; empty when it may write (missing, empty, an earlier export's folder,
 * or one a killed export left before its first manifest line: its lock or temporary folder is there).
 */
export async function foreignNames(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  if (names.some((name) => name === MANIFEST_NAME || name === TMP || isLockFileName(name))) return [];
  return names.filter((name) => !name.startsWith('.')).sort();
}

/** What foreignNames means for a command about to write `shown` (the folder as the user named it). */
export function foreignNamesProblem(shown: string, names: string[], force: string): string {
  const some = names.slice(0, 3).join(', ') + (names.length > 3 ? `, and ${names.length - 3} more` : '');
  return `${shown} holds ${some}, and no ${MANIFEST_NAME}: it is no export folder, and the export could replace a file there with one of the service's. Name a new or empty folder, or an earlier export's${force}`;
}

export class FolderSink implements ExportSink {
  private appending: Promise<void> = Promise.resolve();
  /** Manifest lines waiting for the next append, and the append that will write them. */
  private queued: ManifestLine[] = [];
  private nextBatch: Promise<void> | null = null;
  private manifest: FileHandle | null = null;
  /** Bytes of the manifest that hold whole lines (an append that fails is cut back to this). */
  private manifestSize = 0;
  private counter = 0;
  /** Folders made lately (files come folder by folder): forgotten past RECENT_FOLDERS, a folder is only made again. */
  private readonly madeDirs = new Set<string>();
  /** Folders on the way to the files, checked for links once each. */
  private readonly links: LinkCheck;
  /** The first folder `create` made for the target, if it was not there. */
  private createdFrom: string | undefined;
  /** The earlier run's intact lines (`intactFromEarlierRun`), on disk in the temporary folder. */
  private intact: ManifestIndex | null = null;

  /**
   * Where the files come from, the manifest's first line: this run's, else (a sink given none)
   * the one the earlier run's manifest records.
   */
  private source: ExportSource | undefined;

  private constructor(readonly target: string, private readonly fileMode: number, source: ExportSource | undefined) {
    this.links = new LinkCheck(target);
    this.source = source;
  }

  /** The manifest's source line, or '' when there is no source to record. */
  private get header(): string {
    return this.source ? sourceLineText(this.source) : '';
  }

  /**
   * Writes the lines of the file `from` (whole lines) as the whole manifest, in order and after the
   * source line, through a temporary file.
   */
  private async writeManifest(from: string): Promise<void> {
    const temp = join(this.target, TMP, MANIFEST_NAME);
    await writeSortedManifest(from, temp, undefined, this.header || undefined);
    await rename(temp, join(this.target, MANIFEST_NAME));
  }

  /**
   * Opens (creates) the folder and sweeps temporary files a killed run left behind. With
   * `readOnly` (a snapshot) its files are made without write bits: an editor or a script that
   * opens one for writing is refused, while the run still replaces a file by renaming over it.
   * `source`, when given, is recorded as the manifest's first line.
   */
  static async create(dir: string, options: { readOnly?: boolean; source?: ExportSource } = {}): Promise<FolderSink> {
    const sink = new FolderSink(dir, options.readOnly ? 0o444 : 0o666, options.source);
    // Made from the absolute path: what mkdir answers is then a parent of the target, or the target.
    sink.createdFrom = await mkdir(resolve(dir), { recursive: true });
    await rm(join(dir, TMP), { recursive: true, force: true });
    await mkdir(join(dir, TMP));
    return sink;
  }

  /**
   * The earlier run's lines whose files are there with their size and sha256, read in manifest
   * order and kept on disk (IntactLines), not as a map of every file. Every file is hashed again:
   * DESIGN.md section 4 skips only files whose hash matches, and a file changed in place (or
   * damaged on disk) keeps its size and may keep its times.
   */
  async intactFromEarlierRun(): Promise<ReadonlyMap<string, ManifestLine>> {
    let earlier: OrderedManifest;
    try {
      earlier = await openManifestInOrder(this.target);
    } catch {
      return new Map();
    }
    const writer = await IntactLines.create(join(this.target, TMP, 'intact'));
    try {
      this.source ??= earlier.source;
      // Paths that could leave the folder are refused by the manifest's reader, links on the way here.
      const links = new LinkCheck(this.target);
      const intact = async ({ line }: { line: ManifestLine }): Promise<ManifestLine | undefined> => {
        if (await links.folderLinkIn(line.path)) return undefined;
        const path = join(this.target, line.path);
        try {
          // One lstat tells a link (never followed) and the size.
          const info = await lstat(path);
          if (info.isSymbolicLink() || !info.isFile() || info.size !== line.size) return undefined;
          if ((await hashFile(path)).sha256 !== line.sha256) return undefined;
        } catch {
          return undefined;
        }
        return line;
      };
      // Several files checked at once, in manifest order: one at a time, each file's stat and hash
      // waited on its own, and a rerun over 50,000 kept files took 19 s where this takes 9.
      for await (const line of mapInOrder(earlier.lines(), intact, { concurrency: EARLIER_CHECKS, window: EARLIER_CHECKS * 8 })) {
        // Files kept from the earlier run stay in the manifest even if this run lists them no more.
        await writer.add(line);
      }
    } catch (error) {
      await writer.discard();
      throw error;
    } finally {
      await earlier.close();
    }
    this.intact = await writer.index();
    // The manifest on disk now names only the files that are there: a line cut by a killed run is
    // dropped, so the lines this run appends start on a line of their own.
    await this.writeManifest(writer.path);
    return this.intact;
  }

  /**
   * Takes out files an earlier run left that this run does not keep (in a resumed snapshot, those
   * of a member deleted since): first their manifest lines, then the files. Called before this run
   * records a line.
   */
  async drop(lines: ManifestLine[]): Promise<void> {
    if (lines.length === 0) return;
    await this.rewriteManifest('drop', new Set(lines.map(manifestKey)), []);
    for (const line of lines) await rm(join(this.target, line.path), { force: true });
  }

  /** The files stay where they are; only their lines change key, all at once (a moved line may take a key another line leaves). */
  async relabel(changed: { before: ManifestLine; after: ManifestLine }[]): Promise<void> {
    if (changed.length === 0) return;
    await this.rewriteManifest('relabel', new Set(changed.map(({ before }) => manifestKey(before))), changed.map(({ after }) => after));
  }

  /**
   * Rewrites the manifest an earlier run left, before this run records a line: without the lines
   * of `gone` (keys), with `added`, in order. Read and sorted a block at a time, as at the end.
   */
  private async rewriteManifest(what: string, gone: ReadonlySet<string>, added: ManifestLine[]): Promise<void> {
    if (this.manifest || this.queued.length > 0) throw new Error(`${what} is for files of an earlier run, before this run records any`);
    const edited = join(this.target, TMP, 'edited.jsonl');
    const handle = await open(edited, 'w');
    try {
      const into = { problems: [] as string[] };
      let part: string[] = [];
      for await (const { bytes, number } of readLines(join(this.target, MANIFEST_NAME), { tail: true })) {
        const line = checkManifestLine(bytes.toString('utf8'), number, into);
        into.problems.length = 0;
        if (line && !gone.has(manifestKey(line))) part.push(formatLine(line));
        if (part.length >= 1000) {
          await handle.write(part.join(''));
          part = [];
        }
      }
      // Appended last, so that a moved line wins over one it displaced at the same key.
      await handle.write(part.join('') + added.map(formatLine).join(''));
    } finally {
      await handle.close();
    }
    await this.writeManifest(edited);
    await rm(edited, { force: true });
  }

  async open(path: string): Promise<EntryWriter> {
    this.counter += 1;
    const temp = join(this.target, TMP, `${this.counter}-${randomBytes(4).toString('hex')}`);
    const final = join(this.target, path);
    // Chunks are gathered and written in batches: one write per file for most files, and one per
    // FLUSH_BYTES for large ones, instead of a round trip to the thread pool for every 64 KB read
    // (bench/export: the per-chunk writes made a folder export slower than curl). A batch is on
    // its way to the disk while the next one gathers, and only a writer two batches ahead waits:
    // the connection keeps flowing. The temporary file is created at the first batch, so a small
    // file costs an open, one write, a close and a rename.
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    /** Whether a batch went out before commit: the file is larger than one batch. */
    let batched = false;
    let handle: FileHandle | null = null;
    let writing: Promise<void> = DONE;
    const writeBatch = async (chunks: Buffer[], size: number): Promise<void> => {
      // Made with its mode: the handle opened for writing writes whatever the mode says.
      handle ??= await open(temp, 'w', this.fileMode);
      let left = chunks;
      // A short write is the disk filling up: writing the rest then fails with the reason (ENOSPC).
      for (let written = 0; written < size; ) {
        const { bytesWritten } = await handle.writev(left);
        if (bytesWritten === 0) throw new Error(`only ${written} of ${size} bytes were written`);
        written += bytesWritten;
        left = rest(left, bytesWritten);
      }
    };
    /** Queues what gathered behind the write under way; answers that earlier write. */
    const flush = (): Promise<void> => {
      const chunks = pending;
      const size = pendingBytes;
      pending = [];
      pendingBytes = 0;
      const before = writing;
      writing = before.then(() => writeBatch(chunks, size));
      // Its failure is answered by the next write, commit or abort; it is not left unhandled.
      writing.catch(() => undefined);
      return before;
    };
    const close = async (): Promise<void> => {
      const h = handle;
      handle = null;
      await h?.close();
    };
    const settle = async (): Promise<void> => {
      const last = writing;
      writing = DONE;
      await last.catch(() => undefined);
    };
    return {
      write: (chunk) => {
        pending.push(chunk);
        pendingBytes += chunk.length;
        if (pendingBytes < FLUSH_BYTES) return undefined;
        batched = true;
        const before = flush();
        return before === DONE ? undefined : before;
      },
      restart: async () => {
        pending = [];
        pendingBytes = 0;
        batched = false;
        await settle();
        // The next batch makes the file anew (a read-only one could not be opened again).
        await close();
        await rm(temp, { force: true });
      },
      commit: async () => {
        // A file of one batch is hashed here, from the bytes about to be written: a trip to the
        // hashing thread would cost more (and the thread's memory, for an export of photos).
        // Larger files are read back on the hashing thread, off the main thread.
        const small = batched ? null : digestOf(pending);
        await flush();
        await writing;
        await close();
        const digest = small ?? (await hashFile(temp));
        const dir = dirname(final);
        if (!this.madeDirs.has(dir)) {
          // A folder on the way that is a link (an export folder from elsewhere) could lead outside it.
          const link = await this.links.linkIn(dirname(path));
          if (link) throw new Error(`${join(this.target, link)} is a link; an export does not write through links`);
          await mkdir(dir, { recursive: true });
          if (this.madeDirs.size >= RECENT_FOLDERS) this.madeDirs.clear();
          this.madeDirs.add(dir);
        }
        await rename(temp, final);
        return digest;
      },
      abort: async () => {
        pending = [];
        pendingBytes = 0;
        await settle();
        await close();
        await rm(temp, { force: true });
      },
    };
  }

  /**
   * Records a landed file. Lines arriving while a write is under way go out together in the next
   * one (group commit): appending line by line, each waiting for the one before, made the manifest
   * the queue every download stood in. Resolves when the line is in the file.
   */
  record(line: ManifestLine): Promise<void> {
    this.queued.push(line);
    // Each batch is tried on its own: one that failed (the disk full) does not fail the next.
    this.nextBatch ??= this.appending.catch(() => undefined).then(() => this.appendQueued());
    this.appending = this.nextBatch;
    return this.nextBatch;
  }

  /**
   * Appends the queued lines. Should that fail, the manifest is cut back to its last whole line
   * and the files of these lines are removed: the folder then holds only files its manifest lists.
   */
  private async appendQueued(): Promise<void> {
    this.nextBatch = null;
    const lines = this.queued;
    this.queued = [];
    const texts = lines.map(formatLine);
    let data = Buffer.from(texts.join(''));
    let header = '';
    try {
      if (!this.manifest) {
        this.manifest = await open(join(this.target, MANIFEST_NAME), 'a');
        this.manifestSize = (await this.manifest.stat()).size;
        // A new manifest starts with its source line.
        if (this.manifestSize === 0 && this.header) {
          header = this.header;
          data = Buffer.concat([Buffer.from(header), data]);
        }
      }
      for (let at = 0; at < data.length; ) {
        const { bytesWritten } = await this.manifest.write(data, at);
        if (bytesWritten === 0) throw new Error(`only ${at} of ${data.length} bytes of manifest lines were written`);
        at += bytesWritten;
      }
      this.manifestSize += data.length;
    } catch (error) {
      await this.manifest?.truncate(this.manifestSize).catch(() => undefined);
      await Promise.all(lines.map((line) => rm(join(this.target, line.path), { force: true }).catch(() => undefined)));
      throw error;
    }
  }

  private async closeManifest(): Promise<void> {
    this.intact?.close();
    this.intact = null;
    const handle = this.manifest;
    this.manifest = null;
    await handle?.close();
  }

  /** The files an earlier run left are in place already, and their lines in the manifest. */
  async keep(): Promise<ManifestLine[]> {
    return [];
  }

  /** A folder is continued as it is: its manifest names the files present. */
  pause(onLine?: (line: ManifestLine) => void): Promise<void> {
    return this.finish(onLine);
  }

  async finish(onLine?: (line: ManifestLine) => void): Promise<void> {
    await this.appending;
    await this.closeManifest();
    const manifest = join(this.target, MANIFEST_NAME);
    const temp = join(this.target, TMP, 'manifest.jsonl');
    // The lines are read back from the manifest appended to, rather than kept in memory while
    // the files download, where they grew with the run's files.
    await writeSortedManifest(manifest, temp, onLine, this.header || undefined);
    await rename(temp, manifest);
    await syncFolder(this.target);
    await rm(join(this.target, TMP), { recursive: true, force: true });
  }

  async letGo(): Promise<void> {
    await this.appending.catch(() => undefined);
    await this.closeManifest().catch(() => undefined);
  }

  async abort(): Promise<void> {
    await this.appending.catch(() => undefined);
    await this.closeManifest().catch(() => undefined);
    await rm(join(this.target, TMP), { recursive: true, force: true });
    // A run that failed before its first file leaves no folder it made.
    await removeEmptyDirs(this.target, this.createdFrom);
  }
}
