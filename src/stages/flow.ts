/**
 * The plumbing between stages (DESIGN.md section 2): async iterables with backpressure, so a stage
 * runs only as far ahead of the next as it is allowed to.
 */

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
