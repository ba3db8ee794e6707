/**
 * The file a zip is written to, as the Writable archiver pipes into. archiver writes the central
 * directory as many tiny chunks in one synchronous loop, and behind a stream as slow as the disk
 * they pile up as objects its byte-counting buffers do not see (bench/notes.md, "Zip output").
 * This stream takes chunks at once while its own backlog stays under a bound, joins small ones,
 * and writes what gathered in one `writev` at a time.
 */
import { Writable } from 'node:stream';
import type { FileHandle } from 'node:fs/promises';

/** Bytes waiting for the disk before writers are made to wait. */
const BACKLOG_LIMIT = 4 * 1024 * 1024;
/** Chunks below this size are joined with their neighbours before they are queued. */
const SMALL = 4096;
/** Small chunks joined at a time. */
const JOIN = 256;

type Callback = (error?: Error | null) => void;

export class ZipOutput extends Writable {
  /** Bytes written to the file. */
  written = 0;
  /** Bytes taken from archiver (written or queued here). */
  accepted = 0;
  private waiters: { at: number; resolve: () => void }[] = [];
  /** Chunks queued as they came (not joined), until written; those written; waiters on them. */
  private readonly queued = new Set<Buffer>();
  private readonly done = new WeakSet<Buffer>();
  private readonly watching = new Map<Buffer, (written: boolean) => void>();
  private queue: Buffer[] = [];
  private small: Buffer[] = [];
  private backlog = 0;
  private writing: Promise<void> | null = null;
  private blocked: Callback | null = null;
  private failure: Error | null = null;

  constructor(private readonly handle: FileHandle) {
    super({ highWaterMark: 64 * 1024 });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: Callback): void {
    if (this.failure) return callback(this.failure);
    this.accepted += chunk.length;
    if (this.waiters.length) this.wake();
    this.backlog += chunk.length;
    if (chunk.length < SMALL) {
      this.small.push(chunk);
      if (this.small.length >= JOIN) this.joinSmall();
    } else {
      this.joinSmall();
      this.queue.push(chunk);
      this.queued.add(chunk);
    }
    this.writing ??= this.drainQueue();
    if (this.backlog < BACKLOG_LIMIT) callback();
    else this.blocked = callback;
  }

  override _final(callback: Callback): void {
    const done = async (): Promise<void> => {
      while (this.writing) await this.writing;
      if (this.failure) throw this.failure;
      await this.handle.close();
    };
    done().then(() => callback(), callback);
  }

  /**
   * Resolves once `bytes` bytes in all have been taken from archiver: what archiver still holds
   * of an entry given to it whole is then at most what was appended past that mark. Also resolves
   * when the stream failed or was destroyed (the failure is reported elsewhere).
   */
  whenAccepted(bytes: number): Promise<void> {
    if (this.accepted >= bytes || this.failure || this.destroyed) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ at: bytes, resolve }));
  }

  /**
   * Resolves true once this very Buffer, taken by `_write`, has been written to the file, so its
   * memory may be used again; false at once when it is not among the chunks queued or written
   * (it was joined with others, which copies it, or has not come yet), or when the stream fails.
   */
  whenWritten(chunk: Buffer): Promise<boolean> {
    if (this.done.has(chunk)) return Promise.resolve(true);
    if (!this.queued.has(chunk) || this.failure || this.destroyed) return Promise.resolve(false);
    return new Promise((resolve) => this.watching.set(chunk, resolve));
  }

  private markWritten(chunk: Buffer): void {
    if (!this.queued.delete(chunk)) return;
    this.done.add(chunk);
    const waiting = this.watching.get(chunk);
    if (waiting) {
      this.watching.delete(chunk);
      waiting(true);
    }
  }

  private wake(all = false): void {
    const still: { at: number; resolve: () => void }[] = [];
    for (const waiter of this.waiters) {
      if (all || this.accepted >= waiter.at) waiter.resolve();
      else still.push(waiter);
    }
    this.waiters = still;
    if (all) {
      for (const waiting of this.watching.values()) waiting(false);
      this.watching.clear();
    }
  }

  override _destroy(error: Error | null, callback: Callback): void {
    this.wake(true);
    // A second close of a FileHandle resolves: this is safe after _final.
    this.handle.close().then(() => callback(error), () => callback(error));
  }

  private joinSmall(): void {
    if (this.small.length === 0) return;
    this.queue.push(this.small.length === 1 ? this.small[0]! : Buffer.concat(this.small));
    this.small = [];
  }

  /** Writes until nothing is queued; one writer at a time. */
  private async drainQueue(): Promise<void> {
    try {
      // Let the synchronous writes of the moment gather first.
      await Promise.resolve();
      for (;;) {
        this.joinSmall();
        if (this.queue.length === 0) break;
        let batch = this.queue;
        const whole = batch;
        this.queue = [];
        while (batch.length) {
          const { bytesWritten } = await this.handle.writev(batch);
          if (bytesWritten === 0 && batch.some((b) => b.length > 0)) throw new Error('the disk took no bytes of the zip (is it full?)');
          this.written += bytesWritten;
          this.backlog -= bytesWritten;
          batch = rest(batch, bytesWritten);
        }
        for (const chunk of whole) this.markWritten(chunk);
        this.release();
      }
    } catch (error) {
      this.failure = error as Error;
      this.wake(true);
      this.release();
    } finally {
      this.writing = null;
    }
  }

  private release(): void {
    if (!this.blocked || (this.backlog >= BACKLOG_LIMIT && !this.failure)) return;
    const callback = this.blocked;
    this.blocked = null;
    callback(this.failure);
  }
}

/** The buffers left after `count` bytes of them were written (a partial writev). */
export function rest(buffers: Buffer[], count: number): Buffer[] {
  let skip = count;
  let i = 0;
  while (i < buffers.length && skip >= buffers[i]!.length) {
    skip -= buffers[i]!.length;
    i += 1;
  }
  const left = buffers.slice(i);
  if (skip > 0 && left.length) left[0] = left[0]!.subarray(skip);
  return left;
}
