/**
 * Batching for update requests: as few requests as the limits allow (api-v2.md 8: 100 photos or
 * 1,000 files per request, 250 MB of body), items kept in source order (records are stored in
 * array order, 4.4 Sheets 7).
 */
import { MAX_REQUEST_BYTES } from '../../spec/limits.js';

export interface BatchLimits {
  maxItems: number;
  /** Bytes of JSON body a request may have. */
  maxBodyBytes?: number;
  /** Body bytes outside the items (the opening and closing of the JSON). */
  overheadBytes: number;
}

/**
 * Greedy in order: each batch takes items until the next would pass a limit. For a fixed order this
 * is the fewest batches (a batch can only end earlier, never hold more).
 */
export function planBatches<T>(items: T[], itemBytes: (item: T) => number, limits: BatchLimits): T[][] {
  const maxBody = limits.maxBodyBytes ?? MAX_REQUEST_BYTES;
  const batches: T[][] = [];
  let current: T[] = [];
  let bytes = limits.overheadBytes;
  for (const item of items) {
    const size = itemBytes(item) + 1; // the comma between items
    if (limits.overheadBytes + size > maxBody) throw new Error(`one item needs ${size} bytes of body, over the ${maxBody} bytes a request may have`);
    if (current.length && (current.length >= limits.maxItems || bytes + size > maxBody)) {
      batches.push(current);
      current = [];
      bytes = limits.overheadBytes;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length) batches.push(current);
  return batches;
}

/**
 * {@link planBatches} from numbers alone: how many items each batch takes, greedy, for items of
 * these body bytes (without their comma) in the order `order` gives (indices into `bytes`; all of
 * them in their own order when absent).
 */
export function greedySizes(bytes: ArrayLike<number>, limits: BatchLimits, order?: ArrayLike<number>): number[] {
  const maxBody = limits.maxBodyBytes ?? MAX_REQUEST_BYTES;
  const n = order ? order.length : bytes.length;
  const sizes: number[] = [];
  let count = 0;
  let used = limits.overheadBytes;
  for (let k = 0; k < n; k += 1) {
    const size = bytes[order ? order[k]! : k]! + 1;
    if (count > 0 && (count >= limits.maxItems || used + size > maxBody)) {
      sizes.push(count);
      count = 0;
      used = limits.overheadBytes;
    }
    count += 1;
    used += size;
  }
  if (count > 0) sizes.push(count);
  return sizes;
}

/** Bytes of a JSON string literal of `text` (quotes included). */
export function jsonStringBytes(text: string): number {
  return Buffer.byteLength(JSON.stringify(text));
}

/** The fewest requests any plan can have, from the count of items and their body bytes (each with its comma): by count and by bytes (a lower bound, not always reachable). */
export function fewestRequests(count: number, bodyBytes: number, limits: BatchLimits): number {
  if (!count) return 0;
  const maxBody = limits.maxBodyBytes ?? MAX_REQUEST_BYTES;
  return Math.max(Math.ceil(count / limits.maxItems), Math.ceil(bodyBytes / (maxBody - limits.overheadBytes)));
}

/** Items of one lane (a route, and for attachments a file part) go in requests of their own. */
export interface Batch<T, L> {
  lane: L;
  items: T[];
}

/**
 * The batch stage: {@link planBatches} over a stream. Each batch takes the checked items of its
 * lane until the next would pass a limit, and leaves as soon as it is full, or when its lane ends
 * (items come lane after lane); `first` cuts the first lane's first batch short (see
 * batch-order.ts). A file refused by the check never reaches it, so the requests
 * are the fewest for the order the items come in.
 */
export async function* batchInLanes<T, L>(
  items: AsyncIterable<T>,
  laneOf: (item: T) => L,
  itemBytes: (item: T) => number,
  limits: BatchLimits,
  first?: { lane: L; items: number },
): AsyncGenerator<Batch<T, L>> {
  const maxBody = limits.maxBodyBytes ?? MAX_REQUEST_BYTES;
  let current: Batch<T, L> | null = null;
  let bytes = limits.overheadBytes;
  // The first batch of `first.lane` ends after `first.items` items (the one cut short on purpose).
  let pending = first;
  let short: { batch: Batch<T, L>; items: number } | undefined;
  for await (const item of items) {
    const lane = laneOf(item);
    const size = itemBytes(item) + 1;
    if (limits.overheadBytes + size > maxBody) throw new Error(`one item needs ${size} bytes of body, over the ${maxBody} bytes a request may have`);
    if (current && (current.lane !== lane || current.items.length >= limits.maxItems || bytes + size > maxBody)) {
      yield current;
      current = null;
    }
    if (!current) {
      current = { lane, items: [] };
      bytes = limits.overheadBytes;
    }
    current.items.push(item);
    bytes += size;
    if (pending && pending.lane === lane) {
      short = { batch: current, items: pending.items };
      pending = undefined;
    }
    const cutShort = short?.batch === current && current.items.length >= short.items;
    // Full by count (or as short as planned): it need not wait for the next item to know.
    if (cutShort || current.items.length >= limits.maxItems) {
      yield current;
      current = null;
    }
  }
  if (current) yield current;
}
