/**
 * The CLI's memory tuning (src/util/runtime.ts), each case in a process of its own because V8's
 * flags belong to the whole process: the young generation stays at its size after the hashing
 * thread starts, and large bodies make V8 collect young garbage every COLLECT_EVERY_BYTES, but
 * only in a process that asked for the tuning.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { COLLECT_EVERY_BYTES, EXPORT_YOUNG_BYTES } from '../../src/util/runtime.js';
import { ROOT } from '../helpers/cli-process.js';

const run = promisify(execFile);

async function child<T>(mode: string): Promise<T> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'test/helpers/memory-tuning-child.ts', mode], { cwd: ROOT });
  return JSON.parse(stdout.trim().split('\n').pop()!) as T;
}

describe('memory tuning', () => {
  it('keeps the young generation from growing once the hashing thread has started', async () => {
    const { before, after } = await child<{ before: number; after: number }>('worker');
    // Untuned, or with the worker's start left to undo the tuning, it grows to 32 MB. V8 may
    // shrink it meanwhile (CI saw 4 MB become 2 MB): only growth is the tuning undone.
    expect(after).toBeLessThanOrEqual(before);
    expect(after).toBeLessThanOrEqual(8 * 2 ** 20);
  });

  it('lets an export\'s young generation grow to EXPORT_YOUNG_BYTES and no further, only when tuned', async () => {
    const tuned = await child<{ before: number; after: number }>('export');
    expect(tuned.before).toBeLessThan(EXPORT_YOUNG_BYTES);
    expect(tuned.after).toBe(EXPORT_YOUNG_BYTES);
    // A program using the library keeps V8's own sizes: it grows past that.
    const untuned = await child<{ before: number; after: number }>('export-untuned');
    expect(untuned.after).toBeGreaterThan(EXPORT_YOUNG_BYTES);
  });

  it('puts back the tuning once an export ends, even one that ended before its young generation reached EXPORT_YOUNG_BYTES', async () => {
    // A child of its own: a few files land, the export ends, and the process allocates on.
    const script = `
      import { getHeapSpaceStatistics } from 'node:v8';
      import { exportEnded, exportStarted, fileLanded, tuneForExport, tuneMemory } from './src/util/runtime.ts';
      const young = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
      tuneMemory();
      exportStarted();
      tuneForExport();
      for (let i = 0; i < 5; i += 1) fileLanded();
      exportEnded();
      const atEnd = young();
      let kept = [];
      for (let i = 0; i < 3_000_000; i += 1) {
        kept.push({ i, s: 'x' + i });
        if (kept.length > 50_000) kept = [];
      }
      console.log(JSON.stringify({ atEnd, after: young(), kept: kept.length }));
    `;
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT });
    const { atEnd, after } = JSON.parse(stdout.trim().split('\n').pop()!) as { atEnd: number; after: number };
    // With the export's growth left on, the later allocation grows it past EXPORT_YOUNG_BYTES.
    // V8 may shrink it meanwhile (CI saw 4 MB become 2 MB): only growth is the tuning left on.
    expect(atEnd).toBeLessThan(EXPORT_YOUNG_BYTES);
    expect(after).toBeLessThanOrEqual(atEnd);
  });

  it('collects young garbage for every COLLECT_EVERY_BYTES of large bodies read, only when tuned', async () => {
    const tuned = await child<{ minor: number }>('collect');
    const untuned = await child<{ minor: number }>('untuned');
    // The child counts 40 MB; the untuned process makes next to no garbage of its own.
    expect(tuned.minor).toBeGreaterThanOrEqual(Math.floor((40 * 2 ** 20) / COLLECT_EVERY_BYTES));
    expect(untuned.minor).toBeLessThan(2);
  });
});
