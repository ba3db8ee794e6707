/**
 * Batching for update requests: as few requests as the limits allow (api-v2.md 8: 100 photos or
 * 1,000 files per request, 250 MB of body), items kept in source order (records are stored in
 * array order, 4.4 Sheets 7).
 */
import { MAX_REQUEST_BYTES } from '../spec/limits.js';

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

/** Bytes of a JSON string literal of `text` (quotes included). */
export function jsonStringBytes(text: string): number {
  return Buffer.byteLength(JSON.stringify(text));
}
