/**
 * Work over a stream of items a few at a time, in order: for stages (src/stages/flow.ts) and for
 * sinks that check what an earlier run left.
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
