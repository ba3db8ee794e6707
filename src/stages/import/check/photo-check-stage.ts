/**
 * The check and normalize stages of the photo import. Check: each photo's bytes read and judged
 * by the photo checker's process (real type, whole, 5 MB), a few at a time, in route order, only
 * as far ahead of the requests as the window allows. Normalize: a photo the checker converted
 * (its conversion runs with the check, in the same process, so a photo is decoded once) is sent
 * from its JPEG in the run's temp folder, and the report says what was converted.
 */
import { join } from 'node:path';
import { MAX_PHOTO_SOURCE_BYTES, PhotoChecker, type CheckVerdict } from './photo-checker.js';
import { mapInOrder } from '../../../util/map-in-order.js';
import { GONE_REASON, isGone } from '../../../sources/file-rules.js';
import type { SourceFile } from '../../../sources/source.js';
import type { PhotoRecord, PhotoRoute } from '../photo-route.js';

/** A photo that passed its check, ready to batch. */
export interface CheckedPhoto {
  file: SourceFile;
  code: string;
  route: PhotoRoute | null;
  /** Why it is refused when its route is null and the journal does not know its bytes. */
  refusal?: string;
  /** `updated_at` of the member's photo before anything was sent; null when it had none. */
  before: string | null;
  /** Bytes to send. */
  size: number;
  /** Of the file as the source holds it. */
  sha256: string;
  /** What was converted and why; absent for a photo sent as it is. */
  converted?: string;
  /** The converted JPEG, on disk until sent so that memory stays bounded. */
  tempPath?: string;
}

/** A planned photo found again in the source (`file` null: it no longer holds it). */
export interface FoundPhoto {
  item: PhotoRecord;
  file: SourceFile | null;
}

/** The check's answer on one photo, before the normalize stage. */
export interface PhotoVerdict {
  photo: PhotoRecord;
  file: SourceFile | null;
  verdict: CheckVerdict;
  /** Where the checker wrote the converted JPEG, if it converted it. */
  output: string;
}

/**
 * Photos not on disk (zip entries) are read into buffers of this size kept for the run (larger
 * ones into their own): V8 frees a buffer per file only at a full collection, so dead ones piled
 * up at the peak (bench/notes.md, "Photo read buffers").
 */
const READ_BUFFER_BYTES = 8 * 1024 * 1024;

/** Photos checked ahead of the one the batch stage waits for, beyond those being checked. */
const WINDOW_PER_SLOT = 8;

export class PhotoCheckStage {
  // Image work runs in a process of its own, ended when the last photo is checked (photo-checker.ts).
  readonly #checker = new PhotoChecker();
  readonly #buffers: Buffer[] = [];
  readonly #running = new Set<Promise<unknown>>();
  readonly #halt = new AbortController();
  #next = 0;
  /** Wall time from the first check's start to the last one's end, in milliseconds. */
  ms = 0;

  constructor(
    private readonly temp: string,
    private readonly options: { concurrency: number; convert: boolean; signal?: AbortSignal },
  ) {
    options.signal?.addEventListener('abort', this.#stop, { once: true });
  }

  readonly #stop = (): void => this.#halt.abort();

  /** Aborted when the checking stops (the run's stop, or `close`): what feeds the check stops with it. */
  get signal(): AbortSignal {
    return this.#halt.signal;
  }

  /** Starts the checker's process now, so that it is up by the first photo (it loads the image library). */
  warmUp(): void {
    this.#checker.running().catch(() => undefined);
  }

  /** The check stage: a verdict for each photo, in their order; after a stop, none for photos not begun. */
  async *check(photos: AsyncIterable<FoundPhoto>): AsyncGenerator<PhotoVerdict> {
    const started = Date.now();
    const { concurrency } = this.options;
    try {
      yield* mapInOrder(photos, (photo) => this.#track(this.#checkOne(photo)), { concurrency, window: concurrency * WINDOW_PER_SLOT, signal: this.#halt.signal });
    } finally {
      this.ms = Date.now() - started;
      // The checker's memory goes back as soon as no photo is left to check.
      await this.close();
    }
  }

  /** Stops checking, waits for the checks under way and ends the checker's process. */
  async close(): Promise<void> {
    this.#halt.abort();
    this.options.signal?.removeEventListener('abort', this.#stop);
    while (this.#running.size) await Promise.allSettled([...this.#running]);
    await this.#checker.close();
  }

  #track<T>(job: Promise<T>): Promise<T> {
    this.#running.add(job);
    void job.finally(() => this.#running.delete(job)).catch(() => undefined);
    return job;
  }

  /** Undefined: not reached, as the run was stopped. */
  async #checkOne({ item: photo, file }: FoundPhoto): Promise<PhotoVerdict | undefined> {
    if (this.#halt.signal.aborted) return undefined;
    const output = join(this.temp, `${this.#next++}.jpg`);
    // No longer in the source when it was looked up again: as a file deleted before its check.
    if (!file) return { photo, file, output, verdict: { ok: false, reason: GONE_REASON, gone: true } };
    const checkOptions = { normalize: this.options.convert, output };
    try {
      if (file.diskPath) return { photo, file, output, verdict: await this.#checker.check({ path: file.diskPath, size: file.size }, checkOptions) };
      const buffer = this.#buffers.pop() ?? Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);
      let data: Buffer;
      try {
        data = await file.read(MAX_PHOTO_SOURCE_BYTES, buffer);
      } catch (error) {
        this.#buffers.push(buffer);
        return { photo, file, output, verdict: isGone(error) ? { ok: false, reason: GONE_REASON, gone: true } : { ok: false, reason: (error as Error).message } };
      }
      // The check is done with `data` when it settles: the buffer can take the next photo.
      return { photo, file, output, verdict: await this.#checker.check(data, checkOptions).finally(() => this.#buffers.push(buffer)) };
    } catch (error) {
      // A checker that failed once the run was stopped leaves this photo unreached, not the run failed.
      if (this.#halt.signal.aborted) return undefined;
      throw error;
    }
  }
}

/** The normalize stage: what is sent for each photo that passed, and the report's word on a conversion. */
export function normalizePhoto({ photo, file, verdict, output }: PhotoVerdict): CheckedPhoto | { refused: string; gone?: boolean } {
  if (!file) return { refused: GONE_REASON, gone: true };
  if (!verdict.ok) return { refused: verdict.reason, ...(verdict.gone ? { gone: true } : {}) };
  // Every field written out, not spread: a spread copy of each photo took a hidden class of its
  // own (about 300 bytes a photo, found in a heap snapshot of 8,000 photos).
  return {
    file, code: photo.code, route: photo.route, refusal: photo.refusal, before: photo.before, size: verdict.size, sha256: verdict.sha256,
    converted: verdict.converted || undefined, tempPath: verdict.converted ? output : undefined,
  };
}
