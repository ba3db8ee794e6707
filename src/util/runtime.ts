/**
 * Process-wide tuning shared by the CLI and the benchmark children, so that a benchmark measures
 * the process a user runs.
 */
import { setFlagsFromString } from 'node:v8';

/**
 * Keeps V8's heap close to its live data. A file run allocates many short-lived objects and read
 * buffers; by default the young generation grows to 16 MB semi-spaces and the old generation is
 * let grow to several times its live size between full collections, and that slack, not live
 * data, made most of the peak memory. Measured with bench/export, 20,000 photos:
 * - semi-spaces kept at their initial size: folder 171 -> about 124 MB (20 ms storage latency);
 * - old generation grown by 25 % at a time (V8 picks a factor up to 4 by itself): zip at 0 ms
 *   latency 179-187 -> 127-137 MB, no slower.
 */
export function tuneMemory(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
  setFlagsFromString('--heap-growing-percent=25');
}
