/**
 * One writer per target (DESIGN.md section 8), with real CLI children: two photo exports into one
 * zip, the second started 100 ms after the first while the storage answers slowly, 20 tries. Each
 * time exactly one run succeeds, the other refuses at once (exit 1) naming the first by its pid
 * and its lock file, and the zip verifies, with no lock or partial file left beside it.
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { tempDir } from '../helpers/export.js';
import { SLOW_STORAGE, TWO_WRITERS_COMPANY, expectOneWriter } from './two-writers.js';

const emu = useEmulator({ generate: TWO_WRITERS_COMPANY });
beforeAll(async () => {
  await emu().control('POST', '/faults', SLOW_STORAGE);
});

it('two exports into one zip, 20 tries: one succeeds, the other refuses naming it, and the zip verifies', async () => {
  const tries = Array.from({ length: 20 }, (_, i) => join(tempDir(), `try-${i}`, 'photos.zip'));
  // Five tries at a time, each into its own zip.
  for (let i = 0; i < tries.length; i += 5) {
    await Promise.all(tries.slice(i, i + 5).map((zip) => expectOneWriter(emu(), zip, `${zip}.lock`)));
  }
  for (const zip of tries) expect(readdirSync(dirname(zip))).toEqual(['photos.zip']);
}, 180_000);
