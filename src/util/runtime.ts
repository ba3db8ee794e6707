/**
 * Process-wide tuning shared by the CLI and the benchmark children, so that a benchmark measures
 * the process a user runs.
 */
import { setFlagsFromString } from 'node:v8';

/**
 * Keeps V8's young generation from growing to 16 MB semi-spaces: a file run allocates many short
 * read buffers, and the grown semi-spaces, not live data, made most of its peak memory
 * (bench/export: 20,000 photos 171 MB without, about 122 MB with).
 */
export function keepYoungGenerationSmall(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
}
