/**
 * How fast an export's downloads start: the default concurrency, the connections it starts with,
 * how large bodies and a zip behind hold further starts back, and the downloads' retries. One
 * module for the download stage, the zip sink, the export and the CLI's help, with no imports, so
 * that the help loads none of the stages; how the figures were chosen is in bench/notes.md.
 */

/**
 * Downloads in flight by default. Attachments keep 16: documents run to megabytes, and more
 * connections gain little there and cost memory. Photos take PHOTO_EXPORT_CONCURRENCY, since many
 * connections hide the storage latency of small files.
 */
export const DEFAULT_EXPORT_CONCURRENCY = 16;

/**
 * The default for photos, to a folder or a zip: it starts with fewer connections and opens more
 * only while answers come slowly (START_CONNECTIONS, LatencyWindow), which keeps a first wave of
 * large photos and a near storage within the memory bound.
 */
export const PHOTO_EXPORT_CONCURRENCY = 64;

/** A condition on starting more items besides the pool's own bounds (see `pool`). */
export interface StartGate {
  /** Whether another item may start now, with `connections` holding a connection. */
  open(connections: number): boolean;
  /** Calls `listener` whenever the gate may have opened. */
  onOpen(listener: () => void): void;
}

/**
 * Downloads an export starts with, and keeps to while the storage answers quickly or the files are
 * large (LatencyWindow); each small file answered slowly lets one more start, up to the concurrency.
 */
export const START_CONNECTIONS = 16;

/**
 * An answer that took at least this long (ms, from the request to its headers) lets one more
 * download start (LatencyWindow). It is above the time a near storage's answers wait for this
 * busy process at 64 connections, so that such answers do not hold the window open by themselves.
 */
export const SLOW_ANSWER_MS = 10;

/**
 * How many downloads may be under way: `start` at first, one more (up to `max`) for each small
 * file answered in SLOW_ANSWER_MS or more, one fewer (down to `start`) for each answered sooner,
 * and `start` again at a large file.
 *
 * More connections pay only while the storage's latency bounds the run. With the storage near,
 * the bound is this process's CPU, and the objects of more downloads under way outlive young-
 * generation collections and raise the memory. Requests sent before the first answer cannot be
 * held back, and a first wave of 64 large files alone would be too much memory: hence the start,
 * and the start again at a large file.
 */
export class LatencyWindow implements StartGate {
  private size: number;
  private readonly listeners: (() => void)[] = [];

  constructor(
    private readonly start: number,
    private readonly max: number,
  ) {
    this.size = Math.min(start, max);
  }

  /** A small file was answered after `waitedMs`. */
  small(waitedMs: number): void {
    if (waitedMs >= SLOW_ANSWER_MS) {
      if (this.size >= this.max) return;
      this.size += 1;
      for (const listener of this.listeners) listener();
    } else if (this.size > this.start) this.size -= 1;
  }

  /** A large file was answered. */
  large(): void {
    this.size = Math.min(this.start, this.max);
  }

  open(connections: number): boolean {
    return connections < this.size;
  }

  onOpen(listener: () => void): void {
    this.listeners.push(listener);
  }
}

/** Bodies above this size are large: they take one of LARGE_BODY_CONCURRENCY slots while they are read. */
export const LARGE_BODY_BYTES = 1024 * 1024;

/**
 * Bodies over LARGE_BODY_BYTES read at once, whatever the concurrency. 16, so that at the default
 * 16 connections every large answer is read as it comes instead of waiting open.
 */
export const LARGE_BODY_CONCURRENCY = 16;

/**
 * Downloads at once to a folder while bodies over LARGE_BODY_BYTES are read (LargeFilePace; the
 * concurrency otherwise): fewer large bodies in memory at once, at no cost in time.
 */
export const LARGE_FILE_CONNECTIONS = 10;

/** How long LargeFilePace keeps holding starts back after the last large file, so that a moment with none does not start a burst. */
export const LARGE_FILE_QUIET_MS = 1000;

/**
 * Holds downloads to `connections` while large files are on their way (between `enter` and
 * `leave`) and for LARGE_FILE_QUIET_MS after the last. Small files need many connections to hide
 * the storage latency; large ones fill the line with fewer, and more only hold read buffers and
 * compete for the CPU.
 */
export class LargeFilePace implements StartGate {
  private active = 0;
  private last = 0;
  private readonly listeners: (() => void)[] = [];

  constructor(private readonly connections: number) {}

  enter(): void {
    this.active += 1;
  }

  leave(): void {
    this.active -= 1;
    this.last = Date.now();
    for (const listener of this.listeners) listener();
  }

  open(connections: number): boolean {
    return (this.active === 0 && Date.now() - this.last > LARGE_FILE_QUIET_MS) || connections < this.connections;
  }

  onOpen(listener: () => void): void {
    this.listeners.push(listener);
  }
}

/**
 * Downloads at once while files too large to wait in memory are on their way into a zip. The zip
 * takes one entry at a time, slower than 16 connections bring large files in; the extra downloads
 * only competed with it for the CPU and held more read buffers.
 */
export const ZIP_LARGE_FILE_CONNECTIONS = 8;

/**
 * Entries waiting for the zip past which no new download starts: with a near storage the zip, one
 * entry at a time, is slower than 64 connections, and waiting entries would pile up.
 */
export const ZIP_WAITING_ENTRIES = 16;

/** A gate open when all of `gates` are. */
export function allOf(...gates: StartGate[]): StartGate {
  return {
    open: (connections) => gates.every((gate) => gate.open(connections)),
    onOpen: (listener) => {
      for (const gate of gates) gate.onOpen(listener);
    },
  };
}

/** How long a download's idle connection is kept for the next file. */
export const LANE_KEEP_ALIVE_MS = 30_000;

/**
 * How one file's download is retried, over the client's defaults (which keep their Retry-After
 * bound): 8 attempts, backoff from 100 ms up to 4 s.
 */
export const DOWNLOAD_RETRY = { maxAttempts: 8, baseDelayMs: 100, maxDelayMs: 4_000 } as const;
