/**
 * Process-wide tuning shared by the CLI and the benchmark children, so that a benchmark measures
 * the process a user runs.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Stops V8's young generation from growing past the size it has when this is called: by default
 * it grows to 16 MB semi-spaces, and a file run's short-lived objects and read buffers kept it
 * there. The CLI calls this once its modules are loaded; the young generation is not shrunk, and
 * one held smaller from the process's start moved more read buffers to the old generation
 * (bench/notes.md). Full collections forced as the old generation grew (`gc()`) or asked for at
 * a quarter of its size past the live one lowered the peak at a large cost in CPU; an export
 * lets it grow to twice the live size (tuneForExport).
 */
export function tuneMemory(): void {
  tuned = true;
  setFlagsFromString(FLAGS);
  setFlagsFromString(WASM_BASELINE_ONLY);
}

/**
 * undici parses HTTP with a WebAssembly build of llhttp, and V8's optimising compiler took a large
 * part of a short run's peak memory to compile it at the first request; the baseline compiler's
 * code parses our answers at the same CPU cost (bench/notes.md).
 */
const WASM_BASELINE_ONLY = '--liftoff-only';

/**
 * Applies tuneMemory (and tuneForExport) again if the process asked for it, for a worker thread's
 * start undoes it and the young generation then grows past the tuned size (bench/notes.md). To be
 * called from each worker's 'online' event.
 */
export function keepMemoryTuning(): void {
  if (!tuned) return;
  setFlagsFromString(growing ? GROW : FLAGS);
  if (forExport) setFlagsFromString(EXPORT_OLD_GROWTH);
}

/**
 * Every V8 flag this module may set, as V8 starts with it, with the flags `--liftoff-only` turns
 * off by implication: a code cache made under other flags is refused (src/cli/code-cache.ts).
 */
export const FLAGS_AT_START = [
  '--semi-space-growth-factor=2', '--heap-growing-percent=0', '--no-expose-gc',
  '--no-liftoff-only', '--liftoff', '--wasm-tier-up', '--wasm-dynamic-tiering',
];

const FLAGS = '--semi-space-growth-factor=1';
const GROW = '--semi-space-growth-factor=2';
let tuned = false;
let forExport = false;

/**
 * The size of the young generation's semi-space an export lets it grow to (from what tuneMemory
 * leaves it at). A download's read buffers that live through two young collections move to the
 * old generation, which V8 frees only at a full collection: with young collections less frequent,
 * most files land before their second one.
 */
export const EXPORT_YOUNG_BYTES = 8 * 2 ** 20;

/** Files landed between two looks at the young generation's size while it grows. */
const CHECK_EVERY_FILES = 16;
let growing = false;
let sinceCheck = 0;

const youngBytes = (): number => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;

/**
 * How far the old generation may grow past what lived after a full collection before the next
 * one, in an export (V8 picks a larger factor by itself). With fewer read buffers moving there,
 * V8 collected it too rarely and its garbage grew large (bench/notes.md); at twice the live size,
 * full collections stay few.
 */
const EXPORT_OLD_GROWTH = '--heap-growing-percent=100';

/** Bounds the old generation's growth for an export (EXPORT_OLD_GROWTH), in a tuned process. */
function boundOldGrowth(): void {
  if (!tuned) return;
  forExport = true;
  setFlagsFromString(EXPORT_OLD_GROWTH);
}

/**
 * Prepares a tuned process for an export's downloads: lets the young generation grow to
 * EXPORT_YOUNG_BYTES, as V8 decides from what survives its collections (`fileLanded` stops it
 * there), and bounds the old generation's growth (EXPORT_OLD_GROWTH). Does nothing in a process
 * that did not call tuneMemory.
 */
export function tuneForExport(): void {
  if (!tuned) return;
  boundOldGrowth();
  if (growing || youngBytes() >= EXPORT_YOUNG_BYTES) return;
  growing = true;
  sinceCheck = 0;
  setFlagsFromString(GROW);
}

/** Exports under way in the process: the tuning ends with the last of them. */
let exportsRunning = 0;

/** V8's own bound on the old generation's growth, which tuneMemory leaves in place. */
const DEFAULT_OLD_GROWTH = '--heap-growing-percent=0';

/**
 * Marks an export's start; to be paired with exportEnded, which undoes tuneForExport. The old
 * generation's bound applies from here, not from the first download: a full collection while the
 * service lists would otherwise set V8's limit from V8's own larger factor, for the whole run.
 */
export function exportStarted(): void {
  exportsRunning += 1;
  boundOldGrowth();
}

/**
 * Marks an export's end: once no other export runs, puts back the tuning tuneMemory set (the
 * young generation no longer grows, the old one grows as V8 decides), so that what the process
 * does next is not tuned for downloads. The young generation keeps the size it grew to.
 */
export function exportEnded(): void {
  exportsRunning = Math.max(0, exportsRunning - 1);
  if (exportsRunning > 0 || !forExport) return;
  forExport = false;
  growing = false;
  sinceCheck = 0;
  setFlagsFromString(FLAGS);
  setFlagsFromString(DEFAULT_OLD_GROWTH);
}

/**
 * To be called as each file of an export lands: every CHECK_EVERY_FILES files, stops the young
 * generation's growth once it reached EXPORT_YOUNG_BYTES. V8 grows it by doubling, after some
 * collections each, so it is looked at well before it could double again.
 */
export function fileLanded(): void {
  if (!growing || ++sinceCheck < CHECK_EVERY_FILES) return;
  sinceCheck = 0;
  if (youngBytes() < EXPORT_YOUNG_BYTES) return;
  growing = false;
  setFlagsFromString(FLAGS);
}

/**
 * Bytes of large bodies after which a tuned process asks V8 for a young-generation collection.
 *
 * Node reads each socket into a new buffer of up to 64 KB, dead once its bytes are on disk; V8
 * frees it at the next young-generation collection. Those run when the JavaScript heap's young
 * generation is full, and a large body makes little JavaScript garbage for its bytes: between two
 * collections, tens of MB of read buffers waited. Small bodies do not count: their requests make
 * garbage enough, and collecting more often moves their objects still under way into the old
 * generation.
 */
export const COLLECT_EVERY_BYTES = 8 * 2 ** 20;

type Collect = (options: { type: 'minor'; execution: 'async' }) => unknown;
let collect: Collect | null = null;
let sinceCollect = 0;

/**
 * Counts bytes of a large body that are read (see COLLECT_EVERY_BYTES), and every
 * COLLECT_EVERY_BYTES schedules a young-generation collection as a task of its own. Does nothing
 * in a process that did not call tuneMemory: a program using the library keeps its own GC.
 */
export function largeBodyBytesRead(bytes: number): void {
  if (!tuned) return;
  sinceCollect += bytes;
  if (sinceCollect < COLLECT_EVERY_BYTES) return;
  sinceCollect = 0;
  if (!collect) {
    // The flag gives new contexts a `gc` function; the process's own global stays as it was.
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as Collect;
  }
  void collect({ type: 'minor', execution: 'async' });
}
