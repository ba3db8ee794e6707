/**
 * Import progress when stderr is not a terminal (CI logs, pipes): plain lines at each stage and
 * at the end, with the requests sent against the fewest needed and the ETA the 5-a-minute update
 * window gives.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { noisyJpeg, writeFiles } from '../import/photo-helpers.js';

describe('import progress on a pipe', () => {
  it('prints a line per stage and at the end, with requests against the minimum and the ETA', async () => {
    // In the sample company A0001 has a photo and A0017 has none: one register and one update.
    const dir = await writeFiles(tempDir('wds-lines-'), { 'A0001.jpg': await noisyJpeg(40, 40, 3), 'A0017.jpg': await noisyJpeg(40, 40, 4) });
    const run = await runCli(['photos', 'import', dir, '--no-trim', '--emulator']);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stderr.split('\n');
    expect(lines).toContain('photos import: checking 2/2 files');
    // Two requests left at 5 a minute: 24 s.
    expect(run.stderr).toMatch(/^photos import: sending 0\/2 files, 0 B of [\d.]+ KB, 0 of at least 2 requests, ETA 24 s$/m);
    expect(run.stderr).toMatch(/^photos import: sending 2\/2 files, ([\d.]+ KB) of \1, 2 of at least 2 requests, ETA 0 s$/m);
    expect(run.stderr).not.toContain('\r');
  });
});
