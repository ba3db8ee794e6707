/**
 * The order in which an import sends its items, when only the order inside a lane could matter
 * and members may go in any order (photos): the requests that nothing overlaps go small and light.
 * Those are the first (it waits for its own check), each one whose answer opens the next window of
 * the update limit (the limiter counts a request from its answer), and the last (its upload and
 * task end the run). Planned from numbers alone (each item's body bytes, in typed arrays), so that
 * a plan of many items keeps no object an item (issue 46).
 */
import { greedySizes, type BatchLimits } from './batch.js';

/** The lanes in the order to send them, each item's batch in its lane, and how many go in the first request. */
export interface LaneOrder {
  /**
   * Each lane with items, in sending order: `lane` its index among those given, `bins` each of its
   * items' batch (each batch keeps source order), or null to send it in source order; `gated`,
   * with bins, which of its batches took the lightest items.
   */
  lanes: { lane: number; bins: Int32Array | null; gated: boolean[] }[];
  /** The first lane, whose first batch holds only `items` items (its partial one). */
  first?: { lane: number; items: number };
}

interface Lane {
  lane: number;
  bytes: Float64Array;
  /** Items in each of its batches, as greedy batching makes them (the partial one where it goes). */
  sizes: number[];
  partialBytes: number;
}

/**
 * The lanes' items (`lanes`: each item's body bytes, in source order) lane by lane: the lane with
 * the smallest partial batch first, that batch first; the others after it with the smallest
 * partial batch last. Within a lane, the batches that open a window (every `window`-th request of
 * the run, counted from the first) and the run's first and last batches take the lane's smallest
 * items; the rest keep the source order. A lane keeps as many batches as greedy batching in source
 * order gives it, or keeps the source order.
 */
export function shortEnds(lanes: Float64Array[], limits: BatchLimits, window: number): LaneOrder {
  const planned: Lane[] = [];
  lanes.forEach((bytes, lane) => {
    if (!bytes.length) return;
    const sizes = greedySizes(bytes, limits);
    let partialBytes = 0;
    for (let i = bytes.length - sizes.at(-1)!; i < bytes.length; i += 1) partialBytes += bytes[i]!;
    planned.push({ lane, bytes, sizes, partialBytes });
  });
  const [first, ...rest] = [...planned].sort((a, b) => a.partialBytes - b.partialBytes || a.lane - b.lane);
  if (!first) return { lanes: [] };
  rest.sort((a, b) => b.partialBytes - a.partialBytes || a.lane - b.lane);
  // The first lane's partial batch goes first.
  first.sizes = [first.sizes.at(-1)!, ...first.sizes.slice(0, -1)];
  const total = planned.reduce((n, lane) => n + lane.sizes.length, 0);
  const out: LaneOrder['lanes'] = [];
  let index = 0;
  for (const lane of [first, ...rest]) {
    const gated = lane.sizes.map((_, i) => index + i === 0 || (index + i) % window === 0 || index + i === total - 1);
    index += lane.sizes.length;
    out.push({ lane: lane.lane, bins: lightWhereGated(lane, gated, lane === first, limits), gated });
  }
  return {
    lanes: out,
    first: first.sizes.length > 1 && first.sizes[0]! < first.bytes.length ? { lane: first.lane, items: first.sizes[0]! } : undefined,
  };
}

/**
 * Each item's batch, its lane's smallest items in the gated batches (the smallest of all in the
 * earliest), each batch in source order. Null (the source order) when there is nothing to gate,
 * or when the batch stage would cut that order into more batches (the byte limit binding): the
 * first lane's first batch is cut short, the rest greedily.
 */
function lightWhereGated(lane: Lane, gated: boolean[], cutFirst: boolean, limits: BatchLimits): Int32Array | null {
  const { bytes, sizes } = lane;
  const n = bytes.length;
  if (!gated.some(Boolean) || sizes.length < 2) return null;
  const bySize = new Int32Array(n);
  for (let i = 0; i < n; i += 1) bySize[i] = i;
  bySize.sort((a, b) => bytes[a]! - bytes[b]! || a - b);
  const wanted = sizes.reduce((sum, size, i) => sum + (gated[i] ? size : 0), 0);
  // The lightest to the earliest gated batch; the others in source order.
  const light = new Uint8Array(n);
  for (let k = 0; k < wanted; k += 1) light[bySize[k]!] = 1;
  const bins = new Int32Array(n);
  let lightest = 0;
  let other = 0;
  sizes.forEach((size, batch) => {
    for (let k = 0; k < size; k += 1) {
      if (gated[batch]) {
        bins[bySize[lightest++]!] = batch;
        continue;
      }
      while (light[other]) other += 1;
      bins[other++] = batch;
    }
  });
  // The items in their new order (by batch, then source order), batched again.
  const start = new Int32Array(sizes.length + 1);
  for (let i = 0; i < n; i += 1) start[bins[i]! + 1]! += 1;
  for (let b = 0; b < sizes.length; b += 1) start[b + 1]! += start[b]!;
  const ordered = new Int32Array(n);
  for (let i = 0; i < n; i += 1) ordered[start[bins[i]!]!++] = i;
  const batches = cutFirst ? 1 + greedySizes(bytes, limits, ordered.subarray(sizes[0])).length : greedySizes(bytes, limits, ordered).length;
  return batches === sizes.length ? bins : null;
}
