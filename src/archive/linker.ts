/**
 * Takes unchanged files over from an earlier snapshot into the one being built, on worker threads
 * of their own that make the folders and links with synchronous calls in batches. Made as promises,
 * each folder and link would queue in the thread pool that the downloads of the changed files also
 * wait on, and take main-thread time that their connections need.
 *
 * The checks are those of a link made one by one: a folder of the earlier snapshot is used only
 * when it and every folder above it are real folders (not links), a file only when it is a plain
 * file of the listed size, and a folder of the new snapshot is made by mkdir (new, so no link) or,
 * when an interrupted run left it, checked to be a real folder.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { keepMemoryTuning } from '../util/runtime.js';

/** Errors of `link` that mean the file system has no hard links: the file is copied instead. */
const NO_HARD_LINKS = ['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'EMLINK', 'ENOSYS'];

const WORKER_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { basename, dirname, join } = require('node:path');
const NO_HARD_LINKS = new Set(workerData.noHardLinks);
const target = workerData.target;
let copying = false;
// Folders made (or checked) before: by this thread, or by the one that made them ahead of the run.
const made = new Set(workerData.made);
const plainFolders = new Map();
const subfolders = new Map();

function subfoldersOf(path) {
  let names = subfolders.get(path);
  if (!names) {
    try {
      names = new Set(fs.readdirSync(path, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name));
    } catch {
      names = new Set();
    }
    subfolders.set(path, names);
  }
  return names;
}

function sourceFolderIsPlain(root, folder) {
  if (folder === '.') return true;
  const key = root + '\\0' + folder;
  let plain = plainFolders.get(key);
  if (plain === undefined) {
    const parent = dirname(folder);
    plain = sourceFolderIsPlain(root, parent) && subfoldersOf(join(root, parent)).has(basename(folder));
    plainFolders.set(key, plain);
  }
  return plain;
}

function makeFolder(folder) {
  if (folder === '.' || made.has(folder)) return;
  makeFolder(dirname(folder));
  const path = join(target, folder);
  try {
    fs.mkdirSync(path);
  } catch (error) {
    if (error.code !== 'EEXIST') throw error;
    const info = fs.lstatSync(path);
    if (info.isSymbolicLink()) throw Object.assign(new Error(path + ' is a link; a snapshot does not write through links'), { path });
    if (!info.isDirectory()) throw Object.assign(new Error(path + ' is a file where the snapshot needs a folder'), { path });
  }
  made.add(folder);
}

function linkOrCopy(source, to) {
  if (!copying) {
    try {
      fs.linkSync(source, to);
      return;
    } catch (error) {
      if (!NO_HARD_LINKS.has(error.code)) throw error;
      copying = true;
    }
  }
  fs.copyFileSync(source, to, fs.constants.COPYFILE_EXCL);
}

function place(root, from, to, size) {
  if (!sourceFolderIsPlain(root, dirname(from))) return false;
  const source = join(root, from);
  try {
    const info = fs.lstatSync(source);
    if (!info.isFile() || info.size !== size) return false;
  } catch {
    return false;
  }
  makeFolder(dirname(to));
  const path = join(target, to);
  try {
    linkOrCopy(source, path);
  } catch (error) {
    if (error.code === 'ENOENT') return false;
    if (error.code !== 'EEXIST') throw error;
    fs.unlinkSync(path);
    linkOrCopy(source, path);
  }
  return true;
}

// placed[i]: 1 placed, 0 refused, 2 not reached (a file error stopped the batch before it).
let targetMade = false;
parentPort.on('message', ({ id, roots, items, folders, more }) => {
  if (folders) {
    if (!targetMade) {
      fs.mkdirSync(target, { recursive: true });
      targetMade = true;
    }
    // Folders made ahead: one that cannot be made is left for the run, which stops naming it.
    // Parts marked "more" are answered together, by the last part.
    for (const folder of folders) {
      try {
        makeFolder(folder);
      } catch {}
    }
    if (!more) parentPort.postMessage({ id, made: [...made] });
    return;
  }
  const placed = new Uint8Array(items.length / 4).fill(2);
  try {
    for (let i = 0; i < placed.length; i += 1) {
      placed[i] = place(roots[items[4 * i]], items[4 * i + 1], items[4 * i + 2], items[4 * i + 3]) ? 1 : 0;
    }
    parentPort.postMessage({ id, placed, copying });
  } catch (error) {
    parentPort.postMessage({ id, placed, copying, error: { message: error.message, code: error.code, syscall: error.syscall, path: error.path } });
  }
});
`;

/** A thread making folders ahead (Linker.prepareInParts), and how many it was given. */
interface FolderLane {
  worker: Worker;
  count: number;
  made: Promise<string[]>;
}

/** A file to take over: `from` inside the earlier snapshot `root`, `to` inside the new one. */
export interface LinkItem {
  root: string;
  from: string;
  to: string;
  size: number;
}

interface Reply {
  id: number;
  /** Of a batch of folders to make ahead: every folder made or checked. */
  made?: string[];
  placed: Uint8Array;
  copying: boolean;
  error?: { message: string; code?: string; syscall?: string; path?: string };
}

/** Files a worker is given at once: big enough that messages cost little, small enough that a stop is prompt. */
const BATCH = 256;
/** Batches given to a worker before it answers the first: it never waits for the main thread. */
const AHEAD = 2;

/** An error of the worker's file calls, as the same calls on this thread would have thrown it. */
function errorOf(reply: NonNullable<Reply['error']>): Error {
  return Object.assign(new Error(reply.message), Object.fromEntries(Object.entries({ code: reply.code, syscall: reply.syscall, path: reply.path }).filter(([, v]) => v !== undefined)));
}

/** Links (or copies) files into the snapshot at `target`, on `threads` worker threads. */
export class Linker {
  /** Unchanged files were copied, the file system having no hard links. */
  copying = false;
  /** The threads of the runs under way (a test ends one to see that the run fails rather than hangs). */
  readonly workers = new Set<Worker>();
  /** The folders `prepare` made (or found made, as real folders), once it is done. */
  #premade: Promise<string[]> = Promise.resolve([]);

  constructor(
    private readonly target: string,
    private readonly threads: number,
  ) {}

  /**
   * Starts making `folders` (paths inside the target, which is made first), on threads of their
   * own, so that a run can make them while the service lists the files: making a folder is the
   * slowest part of taking a file over. The next `run` waits for them and makes no folder twice.
   * A folder that cannot be made is left for `run`, which then stops naming it.
   */
  prepare(folders: Iterable<string>): void {
    const feed = this.prepareInParts();
    feed.add(folders);
    feed.end();
  }

  /**
   * `prepare`, fed in parts: the threads start on the first folders while the caller reads the
   * rest (an earlier snapshot's manifest, a thousand lines at a time). Each parent folder goes to
   * one thread, the first free one or the one given fewest folders. `end` once all are given.
   */
  prepareInParts(): { add: (folders: Iterable<string>) => void; end: () => void } {
    const sent = new Set<string>();
    const laneOf = new Map<string, FolderLane>();
    const lanes: FolderLane[] = [];
    let ended: (() => void) | undefined;
    const allGiven = new Promise<void>((resolve) => (ended = resolve));
    this.#premade = allGiven.then(() => Promise.all(lanes.map((lane) => lane.made))).then((made) => made.flat(), () => []);
    return {
      add: (folders) => {
        const parts = new Map<FolderLane, string[]>();
        for (const folder of folders) {
          if (sent.has(folder)) continue;
          sent.add(folder);
          const parent = folderOf(folder);
          let lane = laneOf.get(parent);
          if (!lane) {
            lane = lanes.length < this.threads ? this.#folderLane(lanes) : lanes.reduce((least, l) => (l.count < least.count ? l : least));
            laneOf.set(parent, lane);
          }
          lane.count += 1;
          const part = parts.get(lane);
          if (part) part.push(folder);
          else parts.set(lane, [folder]);
        }
        for (const [lane, part] of parts) lane.worker.postMessage({ id: -1, folders: part, more: true });
      },
      end: () => {
        for (const lane of lanes) lane.worker.postMessage({ id: 0, folders: [] });
        ended!();
      },
    };
  }

  /** A thread that makes folders ahead, added to `lanes`; its `made` settles with its answer to the last part. */
  #folderLane(lanes: FolderLane[]): FolderLane {
    const worker = new Worker(WORKER_CODE, { eval: true, workerData: { target: this.target, noHardLinks: NO_HARD_LINKS, made: [] }, resourceLimits: { maxYoungGenerationSizeMb: 4 } });
    worker.once('online', keepMemoryTuning);
    const made = new Promise<string[]>((resolve, reject) => {
      worker.once('message', (reply: Reply) => resolve(reply.made ?? []));
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the folder thread exited with ${code}`)));
    }).finally(async () => {
      worker.removeAllListeners('exit');
      await worker.terminate();
    });
    made.catch(() => undefined); // awaited through #premade; not an unhandled rejection meanwhile
    const lane = { worker, count: 0, made };
    lanes.push(lane);
    return lane;
  }

  /** The folders `prepare` made or found made: those no file went into are the caller's to remove. */
  premade(): Promise<string[]> {
    return this.#premade;
  }

  /**
   * Takes each item over, calling `onBatch` with those placed and those refused (their file could
   * not be taken over) as each batch is done; the next batch is made meanwhile. Items of one
   * folder go to the same thread. Stops starting batches when `signal` is aborted; items not
   * reached are in neither list. Rejects with the first file error, once the batches under way
   * are done. When `onBatch` throws or a thread dies, the files of batches not handed to `onBatch`
   * are removed, so the snapshot holds no file its manifest does not list; the files of the batch
   * whose `onBatch` threw are that callback's to clean up.
   */
  async run<T extends LinkItem>(items: T[], onBatch: (placed: T[], refused: T[]) => Promise<void>, signal?: AbortSignal): Promise<void> {
    if (items.length === 0) return;
    const made = await this.#premade;
    if (signal?.aborted) return;
    const lanes = lanesOf(items, Math.min(this.threads, Math.ceil(items.length / BATCH)), (item) => folderOf(folderOf(item.to)));
    let failure: Error | null = null;
    const fail = (error: Error): void => {
      failure ??= error;
    };
    await Promise.all(lanes.map((lane) => this.runLane(lane, made, onBatch, () => failure !== null || signal?.aborted === true, fail)));
    if (failure) throw failure;
  }

  private async runLane<T extends LinkItem>(items: T[], made: string[], onBatch: (placed: T[], refused: T[]) => Promise<void>, stopped: () => boolean, fail: (error: Error) => void): Promise<void> {
    if (items.length === 0) return;
    const worker = new Worker(WORKER_CODE, {
      eval: true,
      workerData: { target: this.target, noHardLinks: NO_HARD_LINKS, made },
      // Its old generation holds a name for each folder it made or checked: no cap that an archive
      // of many members could reach.
      resourceLimits: { maxYoungGenerationSizeMb: 4 },
    });
    worker.once('online', keepMemoryTuning);
    this.workers.add(worker);
    const waiting = new Map<number, { resolve: (reply: Reply) => void; reject: (error: Error) => void }>();
    // Once the thread is gone nothing posted to it is answered: every batch waiting, and every one
    // sent later, fails at once instead of waiting forever.
    let dead: Error | null = null;
    /** Batches the thread was given (a batch refused at once touched nothing). */
    const posted = new Set<number>();
    const broken = (error: Error): void => {
      dead ??= error;
      for (const w of waiting.values()) w.reject(dead);
      waiting.clear();
    };
    worker.on('message', (reply: Reply) => {
      const w = waiting.get(reply.id);
      waiting.delete(reply.id);
      w?.resolve(reply);
    });
    worker.on('error', (error) => broken(new Error(`the linking thread failed: ${error.message}`)));
    worker.on('exit', (code) => broken(new Error(`the linking thread exited with ${code}`)));
    const send = (id: number): Promise<Reply> => {
      if (dead) return Promise.reject(dead);
      const batch = items.slice(id * BATCH, (id + 1) * BATCH);
      const roots = [...new Set(batch.map((item) => item.root))];
      const flat: (string | number)[] = [];
      for (const item of batch) flat.push(roots.indexOf(item.root), item.from, item.to, item.size);
      posted.add(id);
      return new Promise<Reply>((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        worker.postMessage({ id, roots, items: flat });
      });
    };
    const batches = Math.ceil(items.length / BATCH);
    const sent: Promise<Reply>[] = [];
    const sendNext = (): void => {
      if (sent.length < batches && !stopped()) {
        const reply = send(sent.length);
        // A batch sent ahead may fail while an earlier one is awaited; it is awaited in its turn.
        reply.catch(() => undefined);
        sent.push(reply);
      }
    };
    /** Batches given to `onBatch`, which records their files. */
    let handed = 0;
    try {
      for (let i = 0; i < AHEAD; i += 1) sendNext();
      for (let id = 0; id < sent.length; id += 1) {
        const reply = await sent[id]!;
        this.copying ||= reply.copying;
        if (reply.error) fail(errorOf(reply.error));
        sendNext();
        // Files placed before an error are in the snapshot too, and recorded like the others.
        const batch = items.slice(id * BATCH, (id + 1) * BATCH);
        handed = id + 1;
        await onBatch(batch.filter((_, i) => reply.placed![i] === 1), batch.filter((_, i) => reply.placed![i] === 0));
      }
    } catch (error) {
      fail(error as Error);
      // Batches under way still land on disk but are not recorded now: once each is answered (or
      // its thread is gone), their files are removed, so the folder holds only files its manifest
      // lists. Of a batch whose thread died it is not known which were placed, so all are removed.
      const rest = await Promise.allSettled(sent.slice(handed));
      const unrecorded: string[] = [];
      rest.forEach((settled, k) => {
        const id = handed + k;
        if (settled.status === 'rejected' && !posted.has(id)) return;
        items.slice(id * BATCH, (id + 1) * BATCH).forEach((item, i) => {
          if (settled.status === 'rejected' || settled.value.placed[i] === 1) unrecorded.push(item.to);
        });
      });
      await Promise.all(unrecorded.map((to) => rm(join(this.target, to), { force: true }).catch(() => undefined)));
    } finally {
      this.workers.delete(worker);
      worker.removeAllListeners('exit');
      await worker.terminate();
    }
  }
}

function folderOf(path: string): string {
  const at = path.lastIndexOf('/');
  return at < 0 ? '.' : path.slice(0, at);
}

/**
 * The items in at most `count` lanes, all those of one parent folder (the folder that holds their
 * folders, such as a file part's `attachments/<sheet>/<field>`) in one lane, the largest groups
 * first to the lane with fewest items. The kernel makes the entries of one folder one at a time,
 * so threads gain only on folders of different parents, and one thread per parent means no two
 * race to make the same folder.
 */
function lanesOf<T>(items: T[], count: number, parentOf: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const parent = parentOf(item);
    const group = groups.get(parent);
    if (group) group.push(item);
    else groups.set(parent, [item]);
  }
  const lanes: T[][] = Array.from({ length: Math.min(count, groups.size) }, () => []);
  for (const group of [...groups.values()].sort((a, b) => b.length - a.length)) {
    const lane = lanes.reduce((least, lane) => (lane.length < least.length ? lane : least));
    for (const item of group) lane.push(item);
  }
  return lanes;
}
