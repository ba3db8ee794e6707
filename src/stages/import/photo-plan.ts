/**
 * The photo import's plan kept on disk (issue 46), so that its memory does not grow with the
 * photos: the names spilled sorted by member code and source order (one reading finds a member's
 * second file, and merges with the listings, photo-route.ts), the routed photos spilled by route
 * in source order, and the order they are sent in ({@link shortEnds}: the smallest first and last
 * requests) planned from each photo's body bytes in typed arrays, before they are read back in
 * that order for their check. Photos that are sent in no case, but whose bytes may make them a
 * skip, come last, in source order.
 *
 * The photos are found again in the source as they are checked (source-lookup.ts), by two
 * readings: one for the lightest photos (those of the batches that open a window), one for the
 * others, which come in source order lane by lane. A single reading would go round the whole
 * source for almost every window of lookups, as the two kinds alternate in the order.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ImportSource, SourceFile, SourceWant } from '../../sources/source.js';
import type { RunReport } from '../report.js';
import type { BatchLimits } from './batch.js';
import { shortEnds } from './batch-order.js';
import { placePhoto, type PhotoRecord, type PhotoRoute, type PhotoRouting, type PlacedPhoto } from './photo-route.js';
import { Grow, laneInBins, LineWriter, linesOf, pad, planSpill, writeLane } from './plan-files.js';
import { SourceLookup } from './source-lookup.js';
import { makeTempDirSync } from '../../util/temp-dir.js';

/** Photos in source order looked up at a time: one stretch of reading finds them however few. */
const OTHERS_WINDOW = 512;

/** The lanes, in the order their indices name them. */
const ROUTES: readonly PhotoRoute[] = ['register', 'update'];

export class PhotoPlan {
  readonly #names = planSpill<PlacedPhoto>();
  readonly #lanes = ROUTES.map(() => planSpill<PhotoRecord>());
  readonly #laneless = planSpill<PhotoRecord>();
  #dir: string | null = null;
  /** Whether each photo in check order is one of the lightest (1) or not (0). */
  #light = new Uint8Array(0);
  /** Photos to check: routed to a lane, or sent in no case but perhaps a skip. */
  files = 0;
  /** The first lane, whose first request holds only this many photos (see batch-order.ts). */
  first: { lane: PhotoRoute; items: number } | undefined;

  constructor(
    /** A photo's body bytes in a request, with its planned size. */
    private readonly itemBytes: (photo: PhotoRecord) => number,
    private readonly limits: BatchLimits,
    /** Update requests in one window of the limit. */
    private readonly window: number,
  ) {}

  /** read: a file named by the source (one off the extension list is refused here). */
  async add(file: SourceFile, order: number, report: RunReport): Promise<void> {
    const placed = placePhoto(file, order, report);
    if (placed) await this.#names.add(`${placed.code}\u0000${pad(order)}`, placed);
  }

  /** dedupe and route: each routed photo goes to its lane's spill (`planned` told of it), the others are reported. */
  async route(routing: PhotoRouting, report: RunReport, planned: (photo: PhotoRecord) => void): Promise<void> {
    await routing.route(this.#names.sorted(), report, async (photo) => {
      this.files += 1;
      if (!photo.route) {
        await this.#laneless.add(pad(photo.order), photo);
        return;
      }
      await this.#lanes[ROUTES.indexOf(photo.route)]!.add(pad(photo.order), photo);
      planned(photo);
    });
    this.#names.close();
  }

  /**
   * The order the photos are sent in, from their body bytes: each lane written out in source
   * order with a number a photo in memory, then {@link shortEnds}; the photos then written out in
   * that order, the lightest and the others apart.
   */
  async planOrder(): Promise<void> {
    const dir = (this.#dir ??= makeTempDirSync('plan'));
    const bytes: Float64Array[] = [];
    for (const [i, lane] of this.#lanes.entries()) {
      const each = new Grow(Float64Array);
      await writeLane(join(dir, `lane-${i}`), lane.sorted(), (photo) => each.push(this.itemBytes(photo)));
      lane.close();
      bytes.push(each.view());
    }
    const order = shortEnds(bytes, this.limits, this.window);
    this.first = order.first && { lane: ROUTES[order.first.lane]!, items: order.first.items };
    const light = new Grow(Uint8Array);
    const writers = [new LineWriter<PhotoRecord>(join(dir, 'others')), new LineWriter<PhotoRecord>(join(dir, 'light'))] as const;
    try {
      for (const { lane, bins, gated } of order.lanes) {
        // Each batch's photos come together: the batch of each photo read back, from the batches' sizes.
        const sizes = new Int32Array(gated.length);
        if (bins) for (const bin of bins) sizes[bin]! += 1;
        let batch = 0;
        let left = sizes[0] ?? 0;
        for await (const photo of laneInBins<PhotoRecord>(join(dir, `lane-${lane}`), bins)) {
          while (bins && left === 0) left = sizes[++batch]!;
          left -= 1;
          const isLight = bins !== null && gated[batch]! ? 1 : 0;
          light.push(isLight);
          writers[isLight].push(photo);
        }
      }
      for await (const [, photo] of this.#laneless.sorted()) {
        light.push(0);
        writers[0].push(photo);
      }
    } finally {
      for (const writer of writers) writer.close();
    }
    this.#light = light.view();
  }

  /**
   * Every photo to check in the order it is checked and sent ({@link planOrder} first), found
   * again in the source (`file` null for one it no longer holds); `signal` stops the readings.
   */
  async* found(source: ImportSource, want: Omit<SourceWant, 'note'>, signal: AbortSignal): AsyncGenerator<{ item: PhotoRecord; file: SourceFile | null }> {
    const dir = this.#dir!;
    // The others come in source order, lane by lane: a window of lookups is found in one stretch of reading.
    const readings = [
      new SourceLookup(source, want, OTHERS_WINDOW).files(linesOf<PhotoRecord>(join(dir, 'others')), signal),
      new SourceLookup(source, want).files(linesOf<PhotoRecord>(join(dir, 'light')), signal),
    ] as const;
    try {
      for (const isLight of this.#light) {
        const next = await readings[isLight as 0 | 1].next();
        if (next.done) return;
        yield next.value;
      }
    } finally {
      for (const reading of readings) await reading.return(undefined);
    }
  }

  /** Removes the temporary files (safe to call twice). */
  close(): void {
    this.#names.close();
    for (const lane of this.#lanes) lane.close();
    this.#laneless.close();
    if (this.#dir) rmSync(this.#dir, { recursive: true, force: true });
    this.#dir = null;
  }
}
