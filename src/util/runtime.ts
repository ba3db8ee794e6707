/**
 * Process-wide tuning shared by the CLI and the benchmark children, so that a benchmark measures
 * the process a user runs.
 */
import { setFlagsFromString } from 'node:v8';

/**
 * Keeps V8's young generation at its initial size: by default it grows to 16 MB semi-spaces, and a
 * file run's many short-lived objects and read buffers kept it there; that slack, not live data,
 * made most of the peak memory (bench/export, 20,000 photos to a folder at 20 ms storage latency:
 * 171 MB without, about 124 MB with).
 *
 * Tried and left out: `--heap-growing-percent=25` took a 20,000-photo zip export at 0 ms latency
 * from about 185 to 130 MB, but made V8 run a full collection for every few MB of read buffers
 * (54 instead of 19 in a 1 GB export) and the 5 MB set fell from about 650 to 530 MB/s.
 */
export function tuneMemory(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
}
