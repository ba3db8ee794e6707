/**
 * The order in which an import sends its items, when only the order inside a lane could matter
 * and members may go in any order (photos): the requests that nothing overlaps go small and light.
 * Those are the first (it waits for its own check), each one whose answer opens the next window of
 * the update limit (the limiter counts a request from its answer), and the last (its upload and
 * task end the run).
 */
import { planBatches, type BatchLimits } from './batch.js';

/** Items in the order to send them, and how many go in the first request. */
export interface LaneOrder<T, L> {
  items: T[];
  /** The first lane, whose first batch holds only `items` items (its partial one). */
  first?: { lane: L; items: number };
}

interface Lane<T, L> {
  lane: L;
  list: T[];
  order: number;
  /** Items in each of its batches, as greedy batching makes them (the partial one where it goes). */
  sizes: number[];
  partialBytes: number;
}

/**
 * The items lane by lane: the lane with the smallest partial batch first, that batch first; the
 * others after it with the smallest partial batch last. Within a lane, the batches that open a
 * window (every `window`-th request of the run, counted from the first) and the run's first and
 * last batches take the lane's smallest items; the rest keep the source order. A lane keeps as
 * many batches as greedy batching in source order gives it, or keeps the source order.
 */
export function shortEnds<T, L>(items: T[], laneOf: (item: T) => L, itemBytes: (item: T) => number, limits: BatchLimits, window: number): LaneOrder<T, L> {
  const groups = new Map<L, T[]>();
  for (const item of items) {
    const lane = laneOf(item);
    const list = groups.get(lane);
    if (list) list.push(item);
    else groups.set(lane, [item]);
  }
  const bytes = (batch: T[]): number => batch.reduce((n, item) => n + itemBytes(item), 0);
  const lanes: Lane<T, L>[] = [...groups].map(([lane, list], order) => {
    const batches = planBatches(list, itemBytes, limits);
    const sizes = batches.map((b) => b.length);
    return { lane, list, order, sizes, partialBytes: bytes(batches.at(-1)!) };
  });
  const [first, ...rest] = [...lanes].sort((a, b) => a.partialBytes - b.partialBytes || a.order - b.order);
  if (!first) return { items: [] };
  rest.sort((a, b) => b.partialBytes - a.partialBytes || a.order - b.order);
  // The first lane's partial batch goes first.
  first.sizes = [first.sizes.at(-1)!, ...first.sizes.slice(0, -1)];
  const total = lanes.reduce((n, lane) => n + lane.sizes.length, 0);
  const out: T[] = [];
  let index = 0;
  for (const lane of [first, ...rest]) {
    const gated = lane.sizes.map((_, i) => index + i === 0 || (index + i) % window === 0 || index + i === total - 1);
    index += lane.sizes.length;
    out.push(...lightWhereGated(lane, gated, lane === first, itemBytes, limits));
  }
  return {
    items: out,
    first: first.sizes.length > 1 && first.sizes[0]! < first.list.length ? { lane: first.lane, items: first.sizes[0]! } : undefined,
  };
}

/**
 * The lane's items batch by batch, its smallest items in the gated batches (the smallest of all in
 * the earliest), each batch in source order. The source order instead when the batch stage would
 * cut that order into more batches (the byte limit binding): the first lane's first batch is cut
 * short, the rest greedily.
 */
function lightWhereGated<T, L>(lane: Lane<T, L>, gated: boolean[], cutFirst: boolean, itemBytes: (item: T) => number, limits: BatchLimits): T[] {
  const { list, sizes } = lane;
  if (!gated.some(Boolean) || sizes.length < 2) return list;
  const position = new Map(list.map((item, i) => [item, i]));
  const bySize = [...list].sort((a, b) => itemBytes(a) - itemBytes(b) || position.get(a)! - position.get(b)!);
  const wanted = sizes.reduce((n, size, i) => n + (gated[i] ? size : 0), 0);
  // The lightest to the earliest gated batch; the others in source order.
  const lightest = bySize.slice(0, wanted);
  const light = new Set(lightest);
  const others = list.filter((item) => !light.has(item));
  const inSource = (batch: T[]): T[] => batch.sort((a, b) => position.get(a)! - position.get(b)!);
  const ordered = sizes.flatMap((size, i) => (gated[i] ? inSource(lightest.splice(0, size)) : others.splice(0, size)));
  const batches = cutFirst ? 1 + planBatches(ordered.slice(sizes[0]), itemBytes, limits).length : planBatches(ordered, itemBytes, limits).length;
  return batches === sizes.length ? ordered : list;
}
