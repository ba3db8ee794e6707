/**
 * The plumbing between stages (DESIGN.md section 2): async iterables with backpressure, so a stage
 * runs only as far ahead of the next as it is allowed to.
 */

/**
 * Each item through `work`, at most `concurrency` at once and at most `window` started ahead of
 * the one the consumer waits for, yielding results in input order (a batch keeps its source
 * order). Work that answers `undefined` (not reached) yields nothing. Once `signal` is aborted
 * nothing new starts: the work under way ends, and work that had not started yields nothing.
 */
export async function* mapInOrder<T, R>(
  items: AsyncIterable<T> | Iterable<T>,
  work: (item: T) => Promise<R | undefined>,
  options: { concurrency: number; window: number; signal?: AbortSignal },
): AsyncGenerator<R> {
  const { signal } = options;
  let running = 0;
  const waiting: (() => void)[] = [];
  const slot = async (): Promise<void> => {
    while (running >= options.concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    running += 1;
  };
  const release = (): void => {
    running -= 1;
    waiting.shift()?.();
  };
  const queue: Promise<R | undefined>[] = [];
  const start = (item: T): void => {
    const job = (async () => {
      await slot();
      try {
        return signal?.aborted ? undefined : await work(item);
      } finally {
        release();
      }
    })();
    // Awaited in turn below; this keeps a failure from counting as unhandled while it waits.
    job.catch(() => undefined);
    queue.push(job);
  };
  for await (const item of items) {
    if (signal?.aborted) break;
    start(item);
    if (queue.length >= options.window) {
      const result = await queue.shift()!;
      if (result !== undefined) yield result;
    }
  }
  while (queue.length) {
    const result = await queue.shift()!;
    if (result !== undefined) yield result;
  }
}

/**
 * Batches checked ahead of the one being sent: enough that the next requests are ready when the
 * update limit lets them go, even where checking a batch takes about as long as a request's turn;
 * few enough that the converted photos waiting on disk stay a couple of batches.
 */
export const BATCHES_AHEAD = 2;

/**
 * Keeps `ahead` items of `items` on their way while the consumer works on the current one: the
 * next batch is checked while this one waits for the limit and is sent.
 */
export async function* prefetch<T>(items: AsyncIterable<T>, ahead: number): AsyncGenerator<T> {
  const iterator = items[Symbol.asyncIterator]();
  const pending: Promise<IteratorResult<T>>[] = [];
  for (;;) {
    while (pending.length <= ahead) {
      const next = iterator.next();
      next.catch(() => undefined);
      pending.push(next);
    }
    const result = await pending.shift()!;
    if (result.done) return;
    yield result.value;
  }
}

/** Runs the rest of a chain to its end for its side effects, ignoring what it yields or throws. */
export async function drain(items: AsyncIterable<unknown>): Promise<void> {
  try {
    for await (const _ of items) { /* nothing: each stage ends its own work */ }
  } catch {
    // The chain was being ended after a failure reported elsewhere.
  }
}
