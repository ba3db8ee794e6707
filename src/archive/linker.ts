/**
 * Takes unchanged files over from an earlier snapshot into the one being built, on worker threads
 * of their own that make the folders and links with synchronous calls in batches. Made as promises,
 * each folder and link would queue in the thread pool that the downloads of the changed files also
 * wait on, and take main-thread time that their connections need.
 *
 * The checks are those of a link made one by one: a folder of the earlier snapshot is used only
 * when it and every folder above it are real folders (not links), a file only when it is a plain
 * file of the listed size last changed while the archive's commands wrote in it (writes.ts; the
 * stat the size is read from gives its change time too), and a folder of the new snapshot is made by mkdir (new, so no link) or,
 * when an interrupted run left it, checked to be a real folder.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { keepMemoryTuning } from '../util/runtime.js';
import { startWorker } from '../util/worker-module.js';
import type { WriteWindows } from './writes.js';
import type { LinkerData, LinkerReply } from './linker-worker.js';

/** Errors of `link` that mean the file system has no hard links: the file is copied instead. */
const NO_HARD_LINKS = ['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'EMLINK', 'ENOSYS'];

/** A thread placing files ahead (Linker.ahead), the files it was given in order, and its answer. */
interface AheadLane {
  worker: Worker;
  /** The parent folders given to it (each parent goes to one thread). */
  parents: Set<string>;
  /**
   * The files given to it whose answer is awaited, when it links them; when it only makes their
   * folders nothing is kept (the earlier snapshot's every file would be, for the whole run).
   */
  files: LinkItem[];
  /** How many files it was given. */
  given: number;
  answer: Promise<Reply>;
}

/** What the threads placed ahead of the listing: the folders made or found made, and the files linked. */
interface Ahead {
  made: string[];
  /** By path inside the new snapshot. */
  placed: Map<string, LinkItem>;
}

/** A file to take over: `from` inside the earlier snapshot `root`, `to` inside the new one. */
export interface LinkItem {
  root: string;
  from: string;
  to: string;
  size: number;
}

type Reply = LinkerReply;

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
  /** What `ahead` placed, once it is done. */
  #ahead: Promise<Ahead> = Promise.resolve({ made: [], placed: new Map() });
  /** The files `ahead` placed so far, in the order the threads answered. */
  #placedInOrder: LinkItem[] = [];
  /** Whether `ahead` links files (not only makes their folders). */
  #aheadLinks = false;
  /** Whether every thread of `ahead` has answered its last part (or failed). */
  #aheadDone = true;
  /** Called at each answer of a thread placing ahead, and when they are done. */
  #onAheadAnswer: (() => void)[] = [];

  constructor(
    private readonly target: string,
    private readonly threads: number,
    /** When the archive's commands wrote in it: a file changed at another time is refused. */
    private readonly writes: WriteWindows = { since: null, windows: [] },
  ) {}

  /** What a thread starts with (linker-worker.ts), given the folders made before it. */
  #data(made: string[]): LinkerData {
    return { target: this.target, noHardLinks: NO_HARD_LINKS, writes: this.writes, made };
  }

  /**
   * Starts placing the files of an earlier snapshot, fed in parts, into the target (made first)
   * before the run knows which are unchanged: a run can then make their folders and links while
   * the service lists the files, and most files are unchanged. Each parent folder goes to one
   * thread, the first free one or the one given fewest files. A file is linked only where nothing
   * is yet, and never copied; one not placed is left to `run`. `end` once all are given. A `run`
   * takes over the files placed as the threads answer each part, then places the rest, no file or
   * folder twice; the files it is not given are the caller's to remove (`placedAhead`).
   *
   * With `links: false` only the folders are made: a file linked before the run knows it is
   * unchanged is not in the manifest until then, and a run killed meanwhile leaves it unlisted.
   *
   * Its threads, once done, wait for the next `run` to link on them; `release` ends them if none comes.
   */
  ahead(options: { links?: boolean } = {}): { add: (files: LinkItem[]) => void; end: () => void } {
    const links = options.links ?? true;
    this.#aheadLinks = links;
    const laneOf = new Map<string, AheadLane>();
    const lanes: AheadLane[] = [];
    let ended: (() => void) | undefined;
    const allGiven = new Promise<void>((resolve) => (ended = resolve));
    this.#aheadDone = false;
    this.#ahead = allGiven
      .then(() => Promise.all(lanes.map((lane) => lane.answer)))
      .then((replies) => {
        const placed = new Map<string, LinkItem>();
        for (const file of this.#placedInOrder) placed.set(file.to, file);
        return { made: replies.flatMap((reply) => reply.made ?? []), placed };
      }, () => ({ made: [], placed: new Map() }))
      .finally(() => {
        this.#aheadDone = true;
        this.#aheadAnswered();
      });
    return {
      add: (files) => {
        const parts = new Map<AheadLane, LinkItem[]>();
        for (const file of files) {
          const parent = folderOf(folderOf(file.to));
          let lane = laneOf.get(parent);
          if (!lane) {
            lane = lanes.length < this.threads ? this.#aheadLane(lanes) : lanes.reduce((least, l) => (l.given < least.given ? l : least));
            laneOf.set(parent, lane);
            lane.parents.add(parent);
          }
          lane.given += 1;
          if (links) lane.files.push(file);
          const part = parts.get(lane);
          if (part) part.push(file);
          else parts.set(lane, [file]);
        }
        for (const [lane, part] of parts) {
          lane.worker.postMessage({ id: -1, ahead: true, more: true, links, ...(links ? flatten(part) : { roots: [], items: part.map((file) => file.to) }) });
        }
      },
      end: () => {
        for (const lane of lanes) lane.worker.postMessage({ id: 0, ahead: true, roots: [], items: [] });
        ended!();
      },
    };
  }

  #aheadAnswered(): void {
    const listeners = this.#onAheadAnswer;
    this.#onAheadAnswer = [];
    for (const listener of listeners) listener();
  }

  /** Resolves at the next answer of a thread placing ahead, or at once when they are done. */
  #nextAheadAnswer(): Promise<void> {
    if (this.#aheadDone) return Promise.resolve();
    return new Promise((resolve) => this.#onAheadAnswer.push(resolve));
  }

  /**
   * A thread that places files ahead, added to `lanes`. Each part's answer adds the files placed
   * to `#placedInOrder`; its `answer` settles with its answer to the last part. A thread that
   * answered its last part waits, unreferenced, for `run` to link in the folders it made
   * (`#idle`): starting two more threads and giving them every folder made cost more than the
   * links of a run of 1 % changed files.
   */
  #aheadLane(lanes: AheadLane[]): AheadLane {
    const worker = startWorker('linker-worker', import.meta.url, { workerData: this.#data([]), resourceLimits: { maxYoungGenerationSizeMb: 4 } });
    worker.once('online', keepMemoryTuning);
    const lane: AheadLane = { worker, parents: new Set(), files: [], given: 0, answer: null! };
    lane.answer = new Promise<Reply>((resolve, reject) => {
      worker.on('message', (reply: Reply) => {
        if (reply.made) {
          resolve(reply);
          return;
        }
        // The answer is for the oldest part awaited; a part of folders alone places no file.
        const part = lane.files.splice(0, reply.placed.length);
        part.forEach((file, i) => reply.placed[i] === 1 && this.#placedInOrder.push(file));
        this.#aheadAnswered();
      });
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the thread placing files ahead exited with ${code}`)));
    }).then(
      (reply) => {
        this.#keepIdle(lane);
        return reply;
      },
      async (error: unknown) => {
        dropListeners(worker);
        await worker.terminate();
        throw error;
      },
    );
    lane.answer.catch(() => undefined); // awaited through #ahead; not an unhandled rejection meanwhile
    lanes.push(lane);
    return lane;
  }

  /** Threads that placed files ahead and wait for `run`, with the parent folders they were given. */
  #idle: { worker: Worker; parents: Set<string> }[] = [];

  #keepIdle(lane: Pick<AheadLane, 'worker' | 'parents'>): void {
    const { worker } = lane;
    dropListeners(worker);
    const idle = { worker, parents: lane.parents };
    // A thread that ends while it waits is simply not used.
    worker.on('error', () => undefined);
    worker.once('exit', () => {
      this.#idle = this.#idle.filter((i) => i !== idle);
    });
    worker.unref();
    this.#idle.push(idle);
  }

  /** Ends the threads still waiting for a run (the snapshot is finished, paused or discarded). */
  async release(): Promise<void> {
    const idle = this.#idle;
    this.#idle = [];
    await Promise.all(idle.map(({ worker }) => {
      dropListeners(worker);
      return worker.terminate();
    }));
  }

  /**
   * The folders `ahead` made or found made, and the paths of the files it linked. Those no file
   * of the manifest went into, and those not in it, are the caller's to remove.
   */
  async placedAhead(): Promise<{ folders: string[]; files: string[] }> {
    const { made, placed } = await this.#ahead;
    return { folders: made, files: [...placed.keys()] };
  }

  /**
   * Takes each item over, calling `onBatch` with those placed and those refused (their file could
   * not be taken over) as each batch is done. Items `ahead` placed are handed over as its threads
   * answer, from when `after` settles (the downloads of a run, which that work would hold back)
   * or they are done; the rest are placed once they are done, in batches, the next batch made
   * meanwhile, the items of one folder on the same thread. Stops starting batches when `signal`
   * is aborted; items not reached are in neither list. Rejects with the first file error, once the batches under way
   * are done. When `onBatch` throws or a thread dies, the files this run linked in batches not
   * handed to `onBatch` are removed, so the snapshot holds no file its manifest does not list; the
   * files of the batch whose `onBatch` threw are that callback's to clean up, and so are those
   * placed ahead and not handed over (`placedAhead`).
   */
  async run<T extends LinkItem>(items: T[], onBatch: (placed: T[], refused: T[]) => Promise<void>, signal?: AbortSignal, after?: Promise<unknown>): Promise<void> {
    if (items.length === 0) return;
    if (after) await Promise.race([after.then(() => undefined, () => undefined), this.#ahead]);
    let failure: Error | null = null;
    const fail = (error: Error): void => {
      failure ??= error;
    };
    const stopped = (): boolean => failure !== null || signal?.aborted === true;
    // A file placed ahead from the same place, of the listed size, is in place already: handed
    // over as its thread answers, while the threads place the next parts. Threads that made only
    // folders placed none: every item is the run's.
    const wanted = this.#aheadLinks ? new Map(items.map((item) => [item.to, item])) : null;
    let seen = 0;
    const placedSince = (): T[] => {
      const done: T[] = [];
      if (!wanted) return done;
      for (const placed = this.#placedInOrder; seen < placed.length; seen += 1) {
        const file = placed[seen]!;
        const item = wanted.get(file.to);
        if (item && item.root === file.root && item.from === file.from && item.size === file.size) {
          wanted.delete(file.to);
          done.push(item);
        }
      }
      return done;
    };
    const handOver = async (done: T[]): Promise<void> => {
      for (let at = 0; at < done.length && !stopped(); at += BATCH) {
        await onBatch(done.slice(at, at + BATCH), []).catch(fail);
      }
    };
    while (!this.#aheadDone && !stopped()) {
      await handOver(placedSince());
      // Answers that came while the last files were handed over are taken at once.
      if (seen === this.#placedInOrder.length) await this.#nextAheadAnswer();
    }
    const { made } = await this.#ahead;
    if (stopped()) {
      if (failure) throw failure;
      return;
    }
    // The last files placed ahead are handed over while the threads place the rest. Should the
    // threads have failed, the files they placed are found in place and taken over.
    const last = placedSince();
    const rest = wanted ? [...wanted.values()] : items;
    // The threads that made the folders ahead link into them, each the files of its own parents:
    // those that own parents of these items first. A thread not needed for these stays for the
    // next run (a caller's next part), which may be of its parents: a new thread would know none
    // of the folders made.
    const parentOf = (item: T): string => folderOf(folderOf(item.to));
    const here = new Set(rest.map(parentOf));
    const owns = (i: { parents: Set<string> }): boolean => [...i.parents].some((parent) => here.has(parent));
    const idle = [...this.#idle.filter(owns), ...this.#idle.filter((i) => !owns(i))];
    const count = Math.min(this.threads, Math.ceil(rest.length / BATCH));
    const lanes = lanesOf(rest, count, parentOf, idle.slice(0, count).map((i) => i.parents));
    this.#idle = idle.slice(lanes.length);
    await Promise.all([
      handOver(last),
      ...lanes.map((lane, i) => this.runLane(lane, made, onBatch, stopped, fail, idle[i])),
    ]);
    if (failure) throw failure;
  }

  /** Links `items` on `idle`'s thread (one that placed files ahead or linked, which knows the folders it made, of `idle.parents`) or on a new thread. */
  private async runLane<T extends LinkItem>(items: T[], made: string[], onBatch: (placed: T[], refused: T[]) => Promise<void>, stopped: () => boolean, fail: (error: Error) => void, idle?: { worker: Worker; parents: Set<string> }): Promise<void> {
    const reused = idle?.worker;
    if (items.length === 0) {
      await reused?.terminate();
      return;
    }
    let worker: Worker;
    if (reused) {
      worker = reused;
      dropListeners(worker);
      worker.ref();
    } else {
      worker = startWorker('linker-worker', import.meta.url, {
        workerData: this.#data(made),
        // Its old generation holds a name for each folder it made or checked: no cap that an archive
        // of many members could reach.
        resourceLimits: { maxYoungGenerationSizeMb: 4 },
      });
      worker.once('online', keepMemoryTuning);
    }
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
      posted.add(id);
      return new Promise<Reply>((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        worker.postMessage({ id, ...flatten(items.slice(id * BATCH, (id + 1) * BATCH)) });
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
    let done = false;
    try {
      for (let i = 0; i < AHEAD; i += 1) sendNext();
      for (let id = 0; id < sent.length; id += 1) {
        const reply = await sent[id]!;
        this.copying ||= reply.copying ?? false;
        if (reply.error) fail(errorOf(reply.error));
        sendNext();
        // Files placed before an error are in the snapshot too, and recorded like the others.
        const batch = items.slice(id * BATCH, (id + 1) * BATCH);
        handed = id + 1;
        await onBatch(batch.filter((_, i) => reply.placed![i] === 1), batch.filter((_, i) => reply.placed![i] === 0));
      }
      done = !stopped() && dead === null;
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
      if (done) {
        // The next run (a caller giving its files a part at a time) links on it, into the folders
        // it knows; `release` ends it if none comes.
        const parents = new Set(idle?.parents);
        for (const item of items) parents.add(folderOf(folderOf(item.to)));
        this.#keepIdle({ worker, parents });
      } else {
        worker.removeAllListeners('exit');
        await worker.terminate();
      }
    }
  }
}

/**
 * Removes the listeners this file gave `worker`: not `removeAllListeners()`, which would take
 * Node's own, those that keep its messages coming as listeners are added.
 */
function dropListeners(worker: Worker): void {
  for (const event of ['message', 'error', 'exit', 'online']) worker.removeAllListeners(event);
}

/** Items as the worker takes them: the roots once, then root index, from (empty when it is `to`), to and size for each. */
function flatten(items: LinkItem[]): { roots: string[]; items: (string | number)[] } {
  const roots = [...new Set(items.map((item) => item.root))];
  const flat: (string | number)[] = [];
  // `from` is most often `to` (a file that stayed where it was): sent once, the message is smaller to copy.
  for (const item of items) flat.push(roots.indexOf(item.root), item.from === item.to ? '' : item.from, item.to, item.size);
  return { roots, items: flat };
}

function folderOf(path: string): string {
  const at = path.lastIndexOf('/');
  return at < 0 ? '.' : path.slice(0, at);
}

/**
 * The items in at most `count` lanes, all those of one parent folder (the folder that holds their
 * folders, such as a file part's `attachments/<sheet>/<field>`) in one lane: a parent in
 * `owners[i]` to lane i, the other groups largest first to the lane with fewest items. The kernel
 * makes the entries of one folder one at a time, so threads gain only on folders of different
 * parents, and one thread per parent means no two race to make the same folder.
 */
function lanesOf<T>(items: T[], count: number, parentOf: (item: T) => string, owners: ReadonlySet<string>[] = []): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const parent = parentOf(item);
    const group = groups.get(parent);
    if (group) group.push(item);
    else groups.set(parent, [item]);
  }
  const lanes: T[][] = Array.from({ length: Math.min(count, groups.size) }, () => []);
  const others: T[][] = [];
  for (const [parent, group] of groups) {
    const owner = owners.findIndex((parents) => parents.has(parent));
    if (owner >= 0 && owner < lanes.length) for (const item of group) lanes[owner]!.push(item);
    else others.push(group);
  }
  for (const group of others.sort((a, b) => b.length - a.length)) {
    const lane = lanes.reduce((least, lane) => (lane.length < least.length ? lane : least));
    for (const item of group) lane.push(item);
  }
  return lanes;
}
