/**
 * A disk that is full when the sheet is written, on a real tmpfs that a filler file mostly takes:
 * the CLI stops (exit 1) with an error naming the file and saying the disk is full; the earlier
 * download is as it was, and no partial file or lock is left. Once there is room, the rerun
 * replaces it. Mounting needs root: elsewhere the test is skipped, saying why.
 */
import { readFileSync, readdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { isRoot, useTmpfs } from '../helpers/tmpfs.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { SAMPLE_COMPANY_DIR } from '../../src/cli/paths.js';


// CLI children on a machine shared by four test files at once: their start-up alone can take seconds.
const CHILD_TIMEOUT_MS = 90_000;
const emu = useEmulator({ seed: SAMPLE_COMPANY_DIR, maintenance: false });

const DISK = '64k';
const PAGE = 4096;

const disk = useTmpfs('legacy-sheet-disk-full.test', DISK);

it.skipIf(!isRoot)('a full disk: exit 1 naming the file and the cause, the earlier download kept, nothing else left; the rerun with room replaces it', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const out = join(disk(), 'members.csv');
  const earlier = '\uFEFFCode\r\nA0001\r\n';
  writeFileSync(out, earlier);
  // One page left: the lock's few bytes fit, the sample's sheet 0 (about 7 KB) does not.
  const { bavail, bsize } = statfsSync(disk());
  writeFileSync(join(disk(), 'filler'), Buffer.alloc(bavail * bsize - PAGE, 1));

  const run = await runCli(['legacy', 'sheet', '0', '--out', out, ...connectionArgs(emu())]);
  expect(run.code, run.stdout + run.stderr).toBe(1);
  expect(run.stderr).toContain(`cannot write ${out}: the disk is full (ENOSPC); the file that was there is as it was`);
  expect(run.stderr).not.toMatch(/closing file descriptor|Warning| {4}at /);
  expect(readFileSync(out, 'utf8')).toBe(earlier);
  expect(readdirSync(disk()).sort()).toEqual(['filler', 'members.csv']);

  rmSync(join(disk(), 'filler'));
  // A second token in the same hour is within the 5 the legacy interface issues.
  const rerun = await runCli(['legacy', 'sheet', '0', '--out', out, ...connectionArgs(emu())]);
  expect(rerun.code, rerun.stderr).toBe(0);
  expect(readFileSync(out).subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
  expect(readFileSync(out, 'utf8')).toContain('A0030');
  expect(readdirSync(disk())).toEqual(['members.csv']);
});
