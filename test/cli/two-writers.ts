/**
 * Two photo exports into one target, the second started 100 ms after the first, as a user starting
 * the same job twice by mistake (the issue's `export --out z.zip & sleep 0.1; export --out z.zip`).
 */
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import type { TestEmulator } from '../helpers/emulator.js';
import { connectionArgs, finished, spawnCli, type CliRun } from '../helpers/cli-process.js';
import { verifyExport } from '../../src/pipelines/verify.js';

export const TWO_WRITERS_MEMBERS = 160;
export const TWO_WRITERS_COMPANY = { members: TWO_WRITERS_MEMBERS, photo_ratio: 1, photo_bytes: [8_192, 10_000] as [number, number], attachments_per_member: [0, 0] as [number, number] };
/** 40 rounds of 4 downloads at 50 ms each: a run writes for 2 s or more, long after the second run starts. */
export const SLOW_STORAGE = { storage: { latency_ms: 50 } };

export const exportArgs = (emu: TestEmulator, out: string, ...more: string[]): string[] =>
  ['photos', 'export', '--out', out, '--concurrency', '4', ...more, ...connectionArgs(emu)];

export type PidRun = CliRun & { pid: number };

/** Starts a CLI child (with `env` added to its environment); its pid and a promise of how it ended. */
export function start(args: string[], env?: NodeJS.ProcessEnv): { pid: number; done: Promise<PidRun> } {
  const child = spawnCli(args, env);
  const pid = child.pid!;
  return { pid, done: finished(child).then((run) => ({ ...run, pid })) };
}

export async function expectOneWriter(emu: TestEmulator, out: string, lockFile: string): Promise<void> {
  const first = start(exportArgs(emu, out));
  await sleep(100);
  const second = start(exportArgs(emu, out));
  const runs = await Promise.all([first.done, second.done]);
  const winners = runs.filter((r) => r.code === 0);
  expect(winners, runs.map((r) => `exit ${r.code}: ${r.stderr}`).join('\n')).toHaveLength(1);
  const winner = winners[0]!;
  const loser = runs.find((r) => r !== winner)!;
  expect(loser.code, loser.stderr).toBe(1);
  expect(loser.stderr).toContain(`is being written by another run: pid ${winner.pid} on `);
  expect(loser.stderr).toContain('(wds-files photos export --out');
  expect(loser.stderr).toContain(`lock file ${lockFile}`);
  expect(loser.stderr).not.toMatch(/\n\s+at /);
  const check = await verifyExport(out);
  expect(check.problems).toEqual([]);
  expect(check.files).toBe(TWO_WRITERS_MEMBERS);
  expect(existsSync(lockFile)).toBe(false);
}

/** Waits, polling every 20 ms, until `condition` holds; fails naming `what` after `timeoutMs`. */
export async function until(what: string, condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
