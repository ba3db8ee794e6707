/**
 * Runs due in the service's nightly window (01:00-01:30 service time, read from its Date header)
 * wait for it to end; the emulator's clock runs at speed 60, a service minute a second.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { launch, type TestEmulator } from '../helpers/emulator.js';
import { Scheduler } from '../../src/schedule/scheduler.js';
import { ScheduleState } from '../../src/schedule/state.js';
import type { RunOutcome, ScheduledJob } from '../../src/schedule/types.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function outcome(status: RunOutcome['status'], started: Date): RunOutcome {
  const finished = new Date();
  return { status, started_at: started.toISOString(), finished_at: finished.toISOString(), duration_ms: finished.getTime() - started.getTime(), files: 0, bytes: 0 };
}

function setUp(jobs: ScheduledJob[]) {
  const lines: string[] = [];
  const stop = new AbortController();
  const state = new ScheduleState(mkdtempSync(join(tmpdir(), 'wds-schedule-')));
  const scheduler = new Scheduler(jobs, { timeZone: 'Asia/Tokyo', signal: stop.signal, log: (line) => lines.push(line), state });
  cleanups.push(async () => {
    stop.abort('SIGTERM');
    await scheduler.finished();
  });
  return { scheduler, stop, lines };
}

describe('the nightly window', () => {
  let emu: TestEmulator;
  afterEach(async () => {
    await emu?.close();
  });

  it('a run due at 01:05 service time (clock at speed 60) starts after 01:30', async () => {
    emu = await launch({ clockStart: '2026-04-01 01:04:58', clockSpeed: 60 });
    const started: string[] = [];
    const job: ScheduledJob = {
      name: 'nightly', file: 'nightly.yaml', cron: '* * * * * *', catchUp: 'once', baseUrl: emu.url,
      run: async () => {
        const at = new Date();
        started.push(emu.emulator.clock.format());
        return outcome('ok', at);
      },
    };
    const { scheduler, stop, lines } = setUp([job]);
    await scheduler.start();
    const deadline = Date.now() + 40_000;
    while (!started.length && Date.now() < deadline) await sleep(200);
    stop.abort('SIGTERM');
    await scheduler.finished();
    expect(started.length).toBe(1);
    const [hours, minutes] = started[0]!.slice(11, 16).split(':').map(Number);
    expect(hours! * 60 + minutes!).toBeGreaterThanOrEqual(90);
    expect(started[0]!.slice(0, 10)).toBe('2026-04-01');
    expect(lines.join('\n')).toMatch(/nightly: the service's time is 2026-04-01 01:0\d:\d\d, in its nightly maintenance window \(01:00-01:30\); waiting until it ends/);
    // Every second was due while it waited: none of them started a second run.
    expect(lines.filter((l) => /still going; skipped/.test(l)).length).toBeGreaterThan(5);
  }, 60_000);

  it('a run due while the service is out of its window starts at once', async () => {
    emu = await launch({ clockStart: '2026-04-01 00:58:00' });
    const started: string[] = [];
    const job: ScheduledJob = {
      name: 'before-window', file: 'x.yaml', cron: '* * * * * *', catchUp: 'once', baseUrl: emu.url,
      run: async () => {
        const at = new Date();
        started.push(emu.emulator.clock.format());
        return outcome('ok', at);
      },
    };
    const { scheduler, stop } = setUp([job]);
    await scheduler.start();
    await sleep(2_300);
    stop.abort('SIGTERM');
    await scheduler.finished();
    expect(started.length).toBeGreaterThanOrEqual(1);
    expect(started[0]!.slice(11, 16)).toBe('00:58');
  });
});
