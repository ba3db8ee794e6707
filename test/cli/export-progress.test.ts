/**
 * The export's progress counts failures and retries apart from the files done: a run whose
 * downloads are being retried, or have failed, no longer looks like a clean "30/30".
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';

describe('export progress', () => {
  const emu = useEmulator({ seed: 'samples/company', maintenance: false });

  it('counts the downloads tried again', async () => {
    await emu().control('POST', '/faults', { storage: { error_rate: 1, max_faults: 5 } });
    const run = await runCli(['photos', 'export', '-o', join(tempDir(), 'out'), ...connectionArgs(emu())]);
    await emu().control('POST', '/faults', { storage: { error_rate: 0 } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/photos export: (\d+)\/\1 files \(5 retries\), /);
  });

  it('counts the files that failed, with the retries they took', async () => {
    await emu().control('POST', '/faults', { storage: { error_rate: 1, max_faults: 1_000_000 } });
    const run = await runCli(['photos', 'export', '-o', join(tempDir(), 'out'), ...connectionArgs(emu())]);
    await emu().control('POST', '/faults', { storage: { error_rate: 0 } });
    expect(run.code).toBe(3);
    // Every file failed after 8 attempts: at least 7 retries each.
    const last = /photos export: (\d+)\/\1 files \((\d+) failed, (\d+) retries\), /.exec(run.stderr.split('\n').filter(Boolean).at(-1) ?? '');
    expect(last, run.stderr).not.toBeNull();
    expect(last![2]).toBe(last![1]);
    expect(Number(last![3])).toBeGreaterThanOrEqual(7 * Number(last![1]));
  }, 60_000);
});
