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
 * (bench/notes.md). A full collection now and then (filesDone) keeps the old generation near its
 * live size; `--heap-growing-percent` did so at the cost of a full collection every few MB of
 * large bodies.
 */
export function tuneMemory(): void {
  tuned = true;
  setFlagsFromString(FLAGS);
  setFlagsFromString(WASM_BASELINE_ONLY);
}

/**
 * undici parses HTTP with a WebAssembly build of llhttp, and V8's optimising compiler took some
 * 35 MB for a moment to compile it at the first request: most of a short run's peak memory. Code
 * from the baseline compiler parses our answers at the same CPU cost (bench/startup.ts, bench/export).
 */
const WASM_BASELINE_ONLY = '--liftoff-only';

/**
 * Applies tuneMemory again if the process asked for it, for a worker thread's start undoes it: with
 * the hashing thread running, an export of 5 MB files saw the young generation grow from 8 to 16
 * MB committed (`v8.getHeapSpaceStatistics()` at each GC); set again once the worker was online,
 * it stayed at 8. To be called from each worker's 'online' event.
 */
export function keepMemoryTuning(): void {
  if (tuned) setFlagsFromString(FLAGS);
}

const FLAGS = '--semi-space-growth-factor=1';
let tuned = false;

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

type Collect = (options: { type: 'minor' | 'major'; execution: 'async' }) => unknown;
let collect: Collect | null = null;
let sinceCollect = 0;

function collector(): Collect {
  if (!collect) {
    // The flag gives new contexts a `gc` function; the process's own global stays as it was.
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as Collect;
  }
  return collect;
}

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
  void collector()({ type: 'minor', execution: 'async' });
}

/**
 * Growth of the old generation since its lowest point after which a tuned process asks V8 for a
 * full collection (filesDone).
 *
 * Each file's objects under way outlive a young-generation collection or two and are moved to the
 * old generation, where they wait for a full collection once dead. V8 starts one when the old
 * generation has about doubled since the last, so a long run carried tens of MB of dead objects.
 */
export const COLLECT_OLD_EVERY_BYTES = 16 * 2 ** 20;

/**
 * Growth of the array buffers' memory since its lowest point after which a tuned process asks V8
 * for a full collection (filesDone).
 *
 * The read buffers of a file under way are moved to the old generation with the objects that
 * hold them, and are freed only by a full collection, which V8 starts for them only 64 MB later.
 * Buffers come and go by tens of MB with the files under way, hence a step twice the old
 * generation's: one smaller asked for a collection every few hundred photos.
 */
export const COLLECT_BUFFERS_EVERY_BYTES = 32 * 2 ** 20;

/** Files between two looks at the heap (filesDone). */
const FILES_PER_LOOK = 32;

let filesSinceLook = 0;
let oldFloor = Infinity;
let buffersFloor = Infinity;

function oldSpaceUsed(): number {
  let used = 0;
  for (const space of getHeapSpaceStatistics()) if (space.space_name === 'old_space') used = space.space_used_size;
  return used;
}

/**
 * Counts files done by a pipeline of many files, and every FILES_PER_LOOK files schedules a full
 * collection when the old generation or the array buffers grew by their step since their lowest
 * point (COLLECT_OLD_EVERY_BYTES, COLLECT_BUFFERS_EVERY_BYTES): the process then stays near its
 * live size, however long the run.
 * Does nothing in a process that did not call tuneMemory.
 */
export function filesDone(count = 1): void {
  if (!tuned) return;
  filesSinceLook += count;
  if (filesSinceLook < FILES_PER_LOOK) return;
  filesSinceLook = 0;
  const old = oldSpaceUsed();
  const buffers = process.memoryUsage().arrayBuffers;
  oldFloor = Math.min(oldFloor, old);
  buffersFloor = Math.min(buffersFloor, buffers);
  if (old < oldFloor + COLLECT_OLD_EVERY_BYTES && buffers < buffersFloor + COLLECT_BUFFERS_EVERY_BYTES) return;
  // The floors start again from here: a collection under way is not asked for twice.
  oldFloor = old;
  buffersFloor = buffers;
  void collector()({ type: 'major', execution: 'async' });
}
