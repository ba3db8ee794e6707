/**
 * Downloads with bounded concurrency from pre-signed URLs (issue 4): undici's `request` on a pool
 * sized to the concurrency, never with the access token; sizes checked against Content-Length;
 * network errors, 5xx and cut or truncated bodies retried with backoff, resuming with Range where
 * the storage offers it; a URL past its deadline, or answered 403, goes back to the lister, and a
 * file that changed since it was listed is downloaded in its new version.
 */
import { finished, type Readable } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';
import type { RemoteFile, UrlLister } from './list-urls.js';
import type { EntryWriter, ExportSink } from '../../sinks/sink.js';
import { backoffDelay, sleep, type RetryPolicy } from '../../client/retry.js';
import { NetworkError } from '../../client/errors.js';
import { CERTIFICATE_REFUSED, certificateRefusedMessage } from '../../client/tls-errors.js';
import { largeBodyBytesRead } from '../../util/runtime.js';
import { LARGE_BODY_BYTES, type LargeFilePace, type LatencyWindow, type StartGate } from '../../util/pacing.js';

export interface DownloadJob {
  file: RemoteFile;
  path: string;
}

export interface DownloadResult {
  job: DownloadJob;
  /** The file as it was when downloaded (a newer version than the first listing when `changed`). */
  file: RemoteFile;
  /** `stopped`: the run was stopped (options.signal) before the file arrived; nothing of it is kept. */
  outcome: 'ok' | 'skipped' | 'failed' | 'stopped';
  reason?: string;
  size?: number;
  sha256?: string;
  changed?: boolean;
}

export interface DownloadOptions {
  dispatcher: Dispatcher;
  lister: Pick<UrlLister, 'refresh'>;
  sink: ExportSink;
  retry: RetryPolicy;
  /** Fresh URLs one file may need before it is given up. */
  maxRefreshes?: number;
  timeoutMs?: number;
  /**
   * Stops the download: no retry starts, and a body that has arrived whole is still put in place.
   * A body on its way is not cut by the signal itself: the caller destroys the dispatcher
   * (ConnectionLanes.destroy), and the download then drops what the sink had of it. Answers
   * outcome `stopped`.
   */
  signal?: AbortSignal;
  /**
   * Called once when the whole body has arrived and checked out, before the sink puts the file in
   * place: from then on the file needs the disk, no longer the connection (see `pool`).
   */
  onReceived?: () => void;
  /**
   * Bodies over LARGE_BODY_BYTES are read by at most this many downloads at once; the others wait
   * with their answer unread (the bytes stay in the kernel, the storage waits). Many connections
   * hide the latency of small files; large ones fill the line with a few, and each body being
   * read holds read buffers and write batches in memory.
   */
  largeBodies?: Slots;
  /** Told when a body over LARGE_BODY_BYTES starts and ends being read. */
  pace?: LargeFilePace;
  /** Told how long each answer took to come, and of large bodies. */
  window?: LatencyWindow;
  /** Told each time a download is about to be tried again. */
  onRetry?: () => void;
  /** Told of each answer's status and how long it took to come (for -v request lines). */
  onAnswer?: (url: string, status: number, ms: number) => void;
}

/** A counting semaphore: `acquire` resolves with the function that gives the slot back. */
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {
    this.free = Math.max(1, size);
  }

  async acquire(): Promise<() => void> {
    if (this.free > 0) this.free -= 1;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free += 1;
    };
  }
}

/** Errors of the sink (disk full, permissions) end the run; download errors end one file. */
export class SinkError extends Error {
  constructor(readonly path: string, cause: unknown) {
    super(`cannot write ${path}: ${(cause as Error).message}`, { cause });
    this.name = 'SinkError';
  }
}

async function sinkStep<T>(path: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw new SinkError(path, error);
  }
}

/**
 * Feeds `body` to `writer` as it comes, pausing the body while the writer asks to wait. Resolves
 * when the body has ended; rejects with the connection's error (a cut or truncated body), or with
 * a SinkError when the writer failed. Read by events rather than `for await`: no promise per chunk
 * unless the writer holds it back, which saves CPU on every body.
 */
function pump(body: Readable, path: string, writer: EntryWriter, onBytes: (bytes: number) => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let failed = false;
    const fail = (error: unknown): void => {
      if (failed) return;
      failed = true;
      body.off('data', onData);
      body.destroy();
      reject(new SinkError(path, error));
    };
    const onData = (chunk: Buffer): void => {
      onBytes(chunk.length);
      let wait: Promise<void> | undefined;
      try {
        wait = writer.write(chunk);
      } catch (error) {
        fail(error);
        return;
      }
      if (!wait) return;
      body.pause();
      wait.then(() => {
        if (!failed) body.resume();
      }, fail);
    };
    body.on('data', onData);
    finished(body, (error) => {
      if (failed) return;
      if (error) reject(error);
      else resolve();
    });
  });
}

/**
 * Downloads one file into the sink. A SinkError (the disk) is thrown, after the sink's writer for
 * the file is dropped: its file handle is closed on every path, and no temporary file stays.
 */
export async function downloadFile(job: DownloadJob, options: DownloadOptions): Promise<DownloadResult> {
  const state: { writer: EntryWriter | null } = { writer: null };
  try {
    return await download(job, options, state);
  } catch (error) {
    await state.writer?.abort().catch(() => undefined);
    throw error;
  }
}

async function download(job: DownloadJob, options: DownloadOptions, state: { writer: EntryWriter | null }): Promise<DownloadResult> {
  const maxRefreshes = options.maxRefreshes ?? 10;
  let current = job.file;
  let changed = false;
  let failures = 0;
  let refreshes = 0;
  let writer: EntryWriter | null = null;
  const { signal } = options;
  let received = 0;
  let total: number | undefined;
  let etag: string | undefined;
  let lastProblem = '';

  const restart = async (): Promise<void> => {
    received = 0;
    total = undefined;
    etag = undefined;
    if (writer) await sinkStep(job.path, () => writer!.restart());
  };
  const giveUp = async (outcome: 'failed' | 'skipped' | 'stopped', reason: string): Promise<DownloadResult> => {
    const dropping = writer;
    writer = null;
    state.writer = null;
    if (dropping) await sinkStep(job.path, () => dropping.abort());
    return { job, file: current, outcome, reason, changed };
  };
  /** Waits before the next attempt; a stop ends the wait at once (the loop then gives up). */
  const pause = (ms: number): Promise<void> => {
    options.onRetry?.();
    return sleep(ms, signal).catch(() => undefined);
  };
  /** A fresh URL for this file; false when the file is gone from the service. */
  const refresh = async (): Promise<boolean> => {
    refreshes += 1;
    let next: RemoteFile | undefined;
    try {
      next = await options.lister.refresh(current.target, current.listedAt, current.key);
    } catch (error) {
      // A stop cuts the listing (the lister has the run's signal): the loop gives the file up as stopped.
      if (signal?.aborted) return true;
      throw error;
    }
    if (!next) return false;
    if (next.updated_at !== current.updated_at) {
      changed = true;
      await restart();
    }
    current = next;
    return true;
  };

  for (;;) {
    if (signal?.aborted) return giveUp('stopped', 'the run was stopped before the file arrived');
    if (refreshes > maxRefreshes) return giveUp('failed', `the download URL expired ${refreshes} times before the file arrived`);
    if (failures >= options.retry.maxAttempts) return giveUp('failed', `gave up after ${failures} attempts: ${lastProblem}`);
    if (Date.now() >= current.deadline) {
      if (!(await refresh())) return giveUp('skipped', 'the file is no longer on the service');
      continue;
    }
    const headers: Record<string, string> = {};
    if (received > 0 && etag) {
      headers.range = `bytes=${received}-`;
      headers['if-range'] = etag;
    }
    let res: Dispatcher.ResponseData;
    const asked = performance.now();
    try {
      res = await request(current.url, {
        method: 'GET',
        headers,
        dispatcher: options.dispatcher,
        headersTimeout: options.timeoutMs ?? 60_000,
        bodyTimeout: options.timeoutMs ?? 60_000,
      });
    } catch (error) {
      if (signal?.aborted) continue;
      const code = (error as { code?: string }).code;
      // Every file of the run would meet the same certificate: the run stops, rather than retry each.
      if (code && CERTIFICATE_REFUSED.has(code)) throw new NetworkError(certificateRefusedMessage(current.url, code, error), { method: 'GET', path: new URL(current.url).pathname, cause: error });
      failures += 1;
      lastProblem = `${code ?? 'network error'}: ${(error as Error).message}`;
      await pause(backoffDelay(failures, options.retry));
      continue;
    }
    const status = res.statusCode;
    options.onAnswer?.(current.url, status, performance.now() - asked);
    if (status === 403 || status === 404) {
      await res.body.dump();
      // 403: expired or refused URL; 404: the version listed is gone. A fresh listing tells.
      if (!(await refresh())) return giveUp('skipped', 'the file is no longer on the service');
      continue;
    }
    if (status !== 200 && status !== 206) {
      await res.body.dump();
      failures += 1;
      lastProblem = `storage answered ${status}`;
      await pause(backoffDelay(failures, options.retry));
      continue;
    }
    const length = Number(res.headers['content-length']);
    if (status === 206) {
      const range = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(res.headers['content-range'] ?? ''));
      if (!range || Number(range[1]) !== received) {
        // Not the part we asked for: start over with the whole file.
        await res.body.dump();
        await restart();
        continue;
      }
      total = Number(range[3]);
    } else {
      if (received > 0) await restart();
      total = Number.isFinite(length) ? length : undefined;
    }
    const acceptsRanges = String(res.headers['accept-ranges'] ?? '') === 'bytes';
    const tag = res.headers.etag;
    etag = acceptsRanges && typeof tag === 'string' && !tag.startsWith('W/') ? tag : undefined;
    writer ??= state.writer = await sinkStep(job.path, () => options.sink.open(job.path, total));
    const largeBody = options.largeBodies && (total ?? Infinity) - received > LARGE_BODY_BYTES;
    const giveSlotBack = largeBody ? await options.largeBodies!.acquire() : undefined;
    const pace = largeBody ? options.pace : undefined;
    if (largeBody) {
      pace?.enter();
      options.window?.large();
    } else options.window?.small(performance.now() - asked);
    try {
      const onBytes = largeBody
        ? (bytes: number): void => {
            received += bytes;
            largeBodyBytesRead(bytes);
          }
        : (bytes: number): void => {
            received += bytes;
          };
      await pump(res.body, job.path, writer, onBytes);
    } catch (error) {
      if (error instanceof SinkError) throw error;
      giveSlotBack?.();
      if (signal?.aborted) continue;
      failures += 1;
      lastProblem = `the connection was cut after ${received} bytes (${(error as Error).message})`;
      if (!etag) await restart();
      await pause(backoffDelay(failures, options.retry));
      continue;
    } finally {
      giveSlotBack?.();
      pace?.leave();
    }
    if (total !== undefined && received !== total) {
      failures += 1;
      lastProblem = `the body had ${received} of ${total} bytes`;
      if (!etag || received > total) await restart();
      await pause(backoffDelay(failures, options.retry));
      continue;
    }
    options.onReceived?.();
    const stored = await sinkStep(job.path, () => writer!.commit());
    state.writer = null;
    if (stored.size !== received) throw new SinkError(job.path, new Error(`${stored.size} of ${received} bytes were stored`));
    return { job, file: current, outcome: 'ok', size: received, sha256: stored.sha256, changed };
  }
}

/**
 * The connections of an export: one undici Client per download slot of `pool` (an Agent of one
 * connection, which makes a Client per origin), instead of one Pool of `count` connections.
 *
 * A Pool hands a freed connection to the next waiting request only at its 'drain' event, a turn of
 * the event loop after the answer ends; the Client then waits a second turn before it writes to the
 * idle socket (its check that the server did not close it). Given to the Client directly, the next
 * request waits only that second turn. Each turn of a busy export's event loop handles every other
 * answer and file that came in meanwhile, so the wait grew with the concurrency and the Pool left
 * its connections idle between requests longer than curl does. A lane never has two requests on
 * the wire: `pool` gives it to one download at a time.
 */
export class ConnectionLanes {
  private readonly agents: Agent[];

  constructor(count: number, options: Omit<Agent.Options, 'connections'> = {}) {
    this.agents = Array.from({ length: Math.max(1, count) }, () => new Agent({ ...options, connections: 1 }));
  }

  /** The dispatcher of lane `index` (0 to count - 1, as `pool` numbers its slots). */
  lane(index: number): Dispatcher {
    const agent = this.agents[index];
    if (!agent) throw new RangeError(`there is no connection lane ${index} of ${this.agents.length}`);
    return agent;
  }

  async close(): Promise<void> {
    await Promise.all(this.agents.map((agent) => agent.close().catch(() => undefined)));
  }

  /**
   * Ends every request under way at once (their downloads see an error, then the stop): a run is
   * stopped this way rather than by handing each request the stop signal, whose listeners cost a
   * 2,000-photo export about a sixth of its time.
   */
  async destroy(): Promise<void> {
    await Promise.all(this.agents.map((agent) => agent.destroy().catch(() => undefined)));
  }
}

/**
 * Items given to a running `pool` as they become known: it waits for more until `end()` is called.
 * An archive run starts downloading the changed files of a file part while the service still lists
 * the others.
 */
/** Items a feed takes at a time from the iterables given to `pushFrom`. */
const ITEMS_PER_REFILL = 256;

export class JobFeed<T> {
  readonly items: T[] = [];
  private ended = false;
  private wake: (() => void) | null = null;
  /** Items still to be taken from iterables given to `pushFrom`, a part at a time. */
  private readonly sources: Iterator<T>[] = [];
  /** Whether an item was given yet (`first`). */
  private given = false;

  constructor(private readonly onFirst?: () => void) {}

  /** Adds items; those of a feed already ended are refused, for no pool would start them. */
  push(items: readonly T[]): void {
    if (this.ended) throw new Error('items were pushed to a feed that had ended');
    if (items.length === 0) return;
    this.first();
    for (const item of items) this.items.push(item);
    this.wake?.();
  }

  /**
   * Adds the items of `items`, taken from it only as the pool needs them (a part at a time, after
   * those pushed before): a large plan is never made into one array.
   */
  pushFrom(items: Iterable<T>): void {
    if (this.ended) throw new Error('items were pushed to a feed that had ended');
    this.sources.push(items[Symbol.iterator]());
    this.wake?.();
  }

  /**
   * @internal For the pool, once it started every item in `items`: empties it and takes the next
   * part from the iterables given. Answers whether there are items again.
   */
  refill(): boolean {
    this.items.length = 0;
    while (this.sources.length > 0 && this.items.length < ITEMS_PER_REFILL) {
      const next = this.sources[0]!.next();
      if (next.done) this.sources.shift();
      else {
        this.first();
        this.items.push(next.value);
      }
    }
    return this.items.length > 0;
  }

  /**
   * Calls `onFirst` at the first item given: an unchanged archive run pushes plans of no job, and
   * a process tuned for downloads that never come let its young generation grow to V8's 16 MB
   * semi-spaces (no file lands to stop it: runtime.ts, fileLanded).
   */
  private first(): void {
    if (this.given) return;
    this.given = true;
    this.onFirst?.();
  }

  /** No more items: the pool ends once those given are done. */
  end(): void {
    this.ended = true;
    this.wake?.();
  }

  /** Ended, with nothing left to take from the iterables given. */
  get done(): boolean {
    return this.ended && this.sources.length === 0;
  }

  /** @internal The pool's callback for each push and the end. */
  listen(wake: () => void): void {
    this.wake = wake;
  }
}

/**
 * Runs `worker` over `items`, in order of start, with at most `concurrency` of them holding a
 * connection at once; results are handed to `onResult` as they come. Each worker is told which of
 * the `concurrency` connection slots it holds (`lane`, for ConnectionLanes); the slot passes to
 * the next worker when this one releases it. A worker gives its place up
 * with `release()` when it needs only the disk any more (its body has arrived), so the next
 * download starts while this one lands: otherwise every download would wait for the file system
 * calls of the last. Items past their release stay
 * counted, so at most `2 × concurrency` are under way; a `gate`, when given, can hold further
 * starts back besides. A thrown error (fatal) stops the starts;
 * what is under way finishes, then the error is rethrown. So does `stop` when
 * aborted, but then `pool` resolves, leaving the items not started. `items` is emptied as they
 * start, so that an item is let go once its result is handled. Given a JobFeed, the pool takes
 * items as they are pushed, and ends once the feed has ended and its items are done.
 */
export async function pool<T, R>(
  source: T[] | JobFeed<T>,
  concurrency: number,
  worker: (item: T, release: () => void, lane: number) => Promise<R>,
  onResult: (result: R) => Promise<void> | void,
  gate?: StartGate,
  stop?: AbortSignal,
): Promise<void> {
  const feed = Array.isArray(source) ? null : source;
  const items = feed ? feed.items : (source as T[]);
  const limit = Math.max(1, concurrency);
  let next = 0;
  let connections = 0;
  let underWay = 0;
  let fatal: unknown = null;
  /** Free connection slots; the last one freed is taken first (its connection is the warmest). */
  const freeLanes = Array.from({ length: limit }, (_, i) => limit - 1 - i);
  let finished!: () => void;
  const allDone = new Promise<void>((resolve) => (finished = resolve));
  /** Nothing under way and nothing more to start. */
  const idle = (): boolean => underWay === 0 && (fatal !== null || Boolean(stop?.aborted) || (next >= items.length && (feed?.done ?? true)));
  /** Whether there is an item to start: the feed's next part is taken once every item given was started. */
  const more = (): boolean => {
    if (next < items.length) return true;
    if (!feed) return false;
    // Emptied, so the next items pushed or taken are at its start.
    // An iterable given to the feed that throws (a listing read back from disk) ends the downloads as a fatal error would.
    let refilled = false;
    try {
      refilled = feed.refill();
    } catch (error) {
      fatal ??= error;
    }
    next = 0;
    return refilled;
  };
  const start = (): void => {
    while (fatal === null && !stop?.aborted && connections < limit && underWay < 2 * limit && (gate?.open(connections) ?? true) && more()) {
      const item = items[next]!;
      items[next++] = undefined as T;
      connections += 1;
      underWay += 1;
      const lane = freeLanes.pop()!;
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        connections -= 1;
        freeLanes.push(lane);
        start();
      };
      void (async () => {
        try {
          await onResult(await worker(item, release, lane));
        } catch (error) {
          fatal ??= error;
        } finally {
          underWay -= 1;
          release();
          start();
          if (idle()) finished();
        }
      })();
    }
  };
  gate?.onOpen(start);
  feed?.listen(() => {
    start();
    if (idle()) finished();
  });
  const onStop = (): void => {
    if (underWay === 0) finished();
  };
  stop?.addEventListener('abort', onStop, { once: true });
  start();
  if (idle()) finished();
  try {
    await allDone;
  } finally {
    stop?.removeEventListener('abort', onStop);
  }
  if (fatal !== null) throw fatal;
}
