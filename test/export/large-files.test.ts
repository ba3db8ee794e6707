/**
 * Files of several write batches (1 to 5 MB): to a folder they are written in batches, to a zip
 * they wait in a spool file; both are hashed as they were stored, on the hashing thread. With cut
 * and truncated bodies resumed mid-file, every file still lands whole with the sha256 of the
 * service (issue 4). Twelve downloads at once share eight slots for large bodies: a slot not given
 * back after a cut would stall the run.
 */
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { expectMatchesState, state, tempDir } from '../helpers/export.js';
import { runExport } from '../../src/pipelines/export.js';
import { hashFile } from '../../src/util/hash-file.js';

const emu = useEmulator({
  generate: { members: 12, photo_ratio: 0, attachments_per_member: [1, 1], attachment_bytes: [1_000_000, 5_000_000] },
});
const api = useClient(emu);

it.each(['attachments', 'attachments.zip'])('large attachments to %s arrive whole despite cuts and truncations', async (name) => {
  await emu().control('POST', '/faults', { storage: { reset_rate: 0.2, truncate_rate: 0.2, seed: 77 } });
  try {
    const out = join(tempDir(), name);
    const result = await runExport({ client: api(), what: 'attachments', out, concurrency: 12, retry: { baseDelayMs: 10, maxDelayMs: 100 } });
    expect(result.report.problems).toBe(0);
    const contents = await expectMatchesState(out, await state(emu()), 'attachments');
    expect(contents.manifest.length).toBe(12);
    expect(Math.min(...contents.manifest.map((line) => line.size))).toBeGreaterThanOrEqual(1_000_000);
  } finally {
    await emu().control('DELETE', '/faults');
  }
});

it('hashes files on its thread: each answer is that of its own file, and a missing file is an error', async () => {
  const dir = tempDir('wds-hash-');
  const sizes = [0, 1, 1 << 20, (1 << 20) + 1, 3_000_000];
  const files = await Promise.all(sizes.map(async (size, i) => {
    const data = Buffer.alloc(size, i + 1);
    const path = join(dir, `f${i}`);
    await writeFile(path, data);
    return { path, size, sha256: createHash('sha256').update(data).digest('hex') };
  }));
  const digests = await Promise.all(files.map((f) => hashFile(f.path)));
  expect(digests).toEqual(files.map(({ size, sha256 }) => ({ size, sha256 })));
  await expect(hashFile(join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
});
