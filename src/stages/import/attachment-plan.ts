/**
 * The attachment import's plan kept on disk (issue 46), so that its memory does not grow with the
 * files: the names are spilled sorted by file part, member and name (src/util/sorted-spill.ts),
 * each member's files routed together against the listings ({@link AttachmentRouting.routeGroup}),
 * the routed files spilled by lane in source order, and each lane's batches planned from numbers
 * alone (a size and a member a file, in typed arrays) before its files are read back in the order
 * they are checked. The order is what it was with every file in memory: lane by lane (file part,
 * then register before update, in the order the parts first come), each lane as its planned
 * batches. Files that are sent in no case, but whose bytes may make them a skip, come first: the
 * held file they are compared with is downloaded from the listing's URL, which expires 15 minutes
 * after the listing, and the lanes' requests may take longer than that at 5 a minute.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { SourceFile } from '../../sources/source.js';
import { MAX_REQUEST_BYTES } from '../../spec/limits.js';
import type { SortedSpill } from '../../util/sorted-spill.js';
import type { RunReport } from '../report.js';
import { placeOf, type AttachmentImportMode, type AttachmentRouting, type PlaceDefaults, type PlacedFile, type RoutedRecord } from './attachment-route.js';
import { fewestRequests, greedySizes, type BatchLimits } from './batch.js';
import { Grow, laneInBins, pad, planSpill as spill, writeLane } from './plan-files.js';
import { refuse } from './read.js';
import { makeTempDirSync } from '../../util/temp-dir.js';

export class AttachmentPlan {
  readonly #names = spill<PlacedFile>();
  /** File parts named (`sheet:field`): a few. */
  readonly parts = new Set<string>();
  readonly #lanes = new Map<string, SortedSpill<RoutedRecord>>();
  readonly #laneless = spill<RoutedRecord>();
  /** Where each file part's first routed file comes in the source. */
  readonly #partAt = new Map<string, number>();
  #groups = 0;
  #dir: string | null = null;
  /** Files to check: routed to a lane, or sent in no case but perhaps a skip. */
  files = 0;

  constructor(
    private readonly given: PlaceDefaults,
    /** A file's body bytes in a request, with its planned size. */
    private readonly itemBytes: (file: RoutedRecord) => number,
    private readonly limits: BatchLimits,
  ) {}

  /** read: a file named by the source, placed (or refused, when nothing says where it goes). */
  async add(file: SourceFile, order: number, report: RunReport): Promise<void> {
    const place = placeOf(file, this.given);
    if (typeof place === 'string') {
      refuse(report, file, file.code ?? '', 'invalid', place);
      return;
    }
    const placed: PlacedFile = {
      where: file.where, relPath: file.relPath, size: file.size, code: place.code, fileName: file.fileName, sheetId: place.sheetId, fieldId: place.fieldId, order,
    };
    this.parts.add(`${place.sheetId}:${place.fieldId}`);
    await this.#names.add(`${place.sheetId}:${place.fieldId}\u0000${place.code}\u0000${file.fileName}\u0000${pad(order)}`, placed);
  }

  /**
   * dedupe and route: each member's files of a file part together, against the listings; each
   * routed file goes to its lane's spill (`planned` told of it), the others are reported.
   */
  async route(routing: AttachmentRouting, mode: AttachmentImportMode, report: RunReport, planned: (file: RoutedRecord, lane: string) => void): Promise<void> {
    let group: PlacedFile[] = [];
    const flush = async (): Promise<void> => {
      const routed: RoutedRecord[] = [];
      await routing.routeGroup(group, this.#groups++, mode, report, (file) => routed.push(file));
      group = [];
      for (const file of routed) {
        this.files += 1;
        if (!file.route) {
          await this.#laneless.add(pad(file.order), file);
          continue;
        }
        const part = `${file.sheetId}:${file.fieldId}`;
        const key = `${part}:${file.route}`;
        let lane = this.#lanes.get(key);
        if (!lane) this.#lanes.set(key, (lane = spill<RoutedRecord>()));
        await lane.add(pad(file.order), file);
        if (!(this.#partAt.get(part)! <= file.order)) this.#partAt.set(part, file.order);
        planned(file, key);
      }
    };
    for await (const [, file] of this.#names.sorted()) {
      const first = group[0];
      if (first && (first.code !== file.code || first.sheetId !== file.sheetId || first.fieldId !== file.fieldId)) await flush();
      group.push(file);
    }
    await flush();
    this.#names.close();
  }

  /** Every routed file in the order it is checked: those sent in no case, then lane by lane, each as its planned batches. */
  async* order(): AsyncGenerator<RoutedRecord> {
    for await (const [, file] of this.#laneless.sorted()) yield file;
    // A file part comes where its first file comes; within it, register before update.
    const rank = (key: string): [number, number] => [this.#partAt.get(key.slice(0, key.lastIndexOf(':')))!, key.endsWith(':register') ? 0 : 1];
    const keys = [...this.#lanes.keys()].sort((a, b) => rank(a)[0] - rank(b)[0] || rank(a)[1] - rank(b)[1]);
    for (const key of keys) {
      yield* this.#laneInBatches(this.#lanes.get(key)!);
      this.#lanes.get(key)!.close();
    }
  }

  /** One lane's files in the order of their planned batches ({@link dealtBatches}, else greedy in source order). */
  async* #laneInBatches(lane: SortedSpill<RoutedRecord>): AsyncGenerator<RoutedRecord> {
    // The lane's files written out in source order, with a size and a member each in memory.
    this.#dir ??= makeTempDirSync('plan');
    const path = join(this.#dir, 'lane');
    const bytes = new Grow(Float64Array);
    const groups = new Grow(Int32Array);
    await writeLane(path, lane.sorted(), (file) => {
      bytes.push(this.itemBytes(file));
      groups.push(file.group);
    });
    yield* laneInBins<RoutedRecord>(path, dealtBatches(bytes.view(), groups.view(), this.#groups, this.limits));
  }

  /** Removes the temporary files (safe to call twice). */
  close(): void {
    this.#names.close();
    for (const lane of this.#lanes.values()) lane.close();
    this.#laneless.close();
    if (this.#dir) rmSync(this.#dir, { recursive: true, force: true });
    this.#dir = null;
  }
}

/**
 * Batches where only the order inside a group matters (a member's records are stored in array
 * order, 4.4 Sheets 7; members may go in any order), planned from numbers alone. Greedy in source
 * order is the fewest when the count limit binds, but when large files bunch together it sends
 * requests full of bytes and short of files, then more requests for the rest. So whole groups (a
 * member's files) are also dealt out, largest first, each to the batch with the fewest bytes that
 * has room (worst fit decreasing), starting from as many batches as the limits demand at least.
 * When that makes fewer batches than greedy: each file's batch, the batches numbered in the order
 * of their first file (each keeps its files in source order); null when greedy is as good (or a
 * group alone passes a limit). `bytes` are
 * each file's body bytes, `groups` each file's group (below `groupCount`).
 */
export function dealtBatches(bytes: Float64Array, groups: Int32Array, groupCount: number, limits: BatchLimits): Int32Array | null {
  const n = bytes.length;
  if (n === 0) return null;
  const maxBody = limits.maxBodyBytes ?? MAX_REQUEST_BYTES;
  const room = maxBody - limits.overheadBytes;
  // Greedy in source order: how many batches.
  const greedy = greedySizes(bytes, limits).length;
  let total = 0;
  for (let i = 0; i < n; i += 1) total += bytes[i]! + 1;
  // The lane's groups, numbered densely in the order they first come.
  const dense = new Int32Array(groupCount).fill(-1);
  const groupBytes: number[] = [];
  const groupFiles: number[] = [];
  const groupFirst: number[] = [];
  const denseOf = new Int32Array(n);
  for (let i = 0; i < n; i += 1) {
    let d = dense[groups[i]!]!;
    if (d < 0) {
      d = dense[groups[i]!] = groupBytes.length;
      groupBytes.push(0);
      groupFiles.push(0);
      groupFirst.push(i);
    }
    denseOf[i] = d;
    groupBytes[d] = groupBytes[d]! + bytes[i]! + 1;
    groupFiles[d] = groupFiles[d]! + 1;
  }
  const sorted = groupBytes.map((_, d) => d).sort((a, b) => groupBytes[b]! - groupBytes[a]! || groupFirst[a]! - groupFirst[b]!);
  if (sorted.some((d) => groupFiles[d]! > limits.maxItems || groupBytes[d]! > room)) return null;
  const binBytes: number[] = [];
  const binFiles: number[] = [];
  for (let b = fewestRequests(n, total, limits); b > 0; b -= 1) {
    binBytes.push(0);
    binFiles.push(0);
  }
  const binOf = new Int32Array(groupBytes.length);
  for (const d of sorted) {
    let best = -1;
    for (let b = 0; b < binBytes.length; b += 1) {
      const fits = binFiles[b]! + groupFiles[d]! <= limits.maxItems && binBytes[b]! + groupBytes[d]! <= room;
      if (fits && (best < 0 || binBytes[b]! < binBytes[best]!)) best = b;
    }
    if (best < 0) {
      best = binBytes.length;
      binBytes.push(0);
      binFiles.push(0);
    }
    binOf[d] = best;
    binBytes[best] = binBytes[best]! + groupBytes[d]!;
    binFiles[best] = binFiles[best]! + groupFiles[d]!;
  }
  const dealt = binFiles.filter((files) => files > 0).length;
  if (dealt >= greedy) return null;
  // Batches in the order of their first file.
  const firstOf = binBytes.map(() => Infinity);
  for (let d = 0; d < groupBytes.length; d += 1) firstOf[binOf[d]!] = Math.min(firstOf[binOf[d]!]!, groupFirst[d]!);
  const rankOf = new Int32Array(binBytes.length);
  binBytes.map((_, b) => b).sort((a, b) => firstOf[a]! - firstOf[b]!).forEach((b, r) => (rankOf[b] = r));
  const out = new Int32Array(n);
  for (let i = 0; i < n; i += 1) out[i] = rankOf[binOf[denseOf[i]!]!]!;
  return out;
}
