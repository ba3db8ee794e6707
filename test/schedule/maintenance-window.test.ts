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
import { inMaintenanceWindow, localClock, probeService } from '../../src/schedule/service-time.js';
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
    // The scheduler is stopped from the first run itself: the next second's run, due as soon as
    // this one ends, would otherwise race the test's look at `started`.
    let firstStarted = (): void => undefined;
    const job: ScheduledJob = {
      name: 'nightly', file: 'nightly.yaml', cron: '* * * * * *', catchUp: 'once', baseUrl: emu.url,
      run: async () => {
        const at = new Date();
        started.push(emu.emulator.clock.format());
        firstStarted();
        return outcome('ok', at);
      },
    };
    const { scheduler, stop, lines } = setUp([job]);
    firstStarted = () => stop.abort('SIGTERM');
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

describe('the service clock', () => {
  let emu: TestEmulator;
  afterEach(async () => {
    await emu?.close();
  });

  it('is read from the Date header, which follows the emulator clock at speed 60, and 503 in the window says how long to wait', async () => {
    emu = await launch({ clockStart: '2026-04-01 00:59:50', clockSpeed: 60 });
    const first = await probeService(emu.url);
    expect(first!.status).not.toBe(503);
    // A base URL written with the API's prefix, as the client takes it, reaches the same endpoint.
    expect((await probeService(`${emu.url}/api/v2.0/`))!.status).toBe(first!.status);
    expect(localClock(first!.serviceMs!, 'Asia/Tokyo').text).toMatch(/^2026-04-01 00:59:5\d$/);
    await sleep(1_000);
    const second = await probeService(emu.url);
    expect(second!.serviceMs! - first!.serviceMs!).toBeGreaterThanOrEqual(55_000);
    expect(second!.status).toBe(503);
    expect(localClock(second!.serviceMs!, 'Asia/Tokyo').text).toMatch(/^2026-04-01 01:00:\d\d$/);
    // Retry-After counts real seconds: the rest of the window at 60 service seconds a second.
    expect(second!.retryAfterMs).toBeGreaterThanOrEqual(29_000);
    expect(second!.retryAfterMs).toBeLessThanOrEqual(31_000);
    // Nothing of this reached the company: no token issued, no request in its windows.
    const stats = await emu.control('GET', '/stats');
    expect(stats.tokens_issued).toBe(0);
  });

  it('names the window in the service zone, not the machine\'s', () => {
    const at = (iso: string) => Date.parse(iso);
    expect(inMaintenanceWindow(at('2026-04-01T16:05:00Z'), 'Asia/Tokyo')).toBe(true);
    expect(inMaintenanceWindow(at('2026-04-01T16:30:00Z'), 'Asia/Tokyo')).toBe(false);
    expect(inMaintenanceWindow(at('2026-04-01T15:59:59Z'), 'Asia/Tokyo')).toBe(false);
    expect(inMaintenanceWindow(at('2026-04-01T01:05:00Z'), 'Asia/Tokyo')).toBe(false);
    expect(inMaintenanceWindow(at('2026-04-01T01:05:00Z'), 'UTC')).toBe(true);
  });

  it('a stop while a run waits for the window ends the wait at once, and the run never starts', async () => {
    emu = await launch({ clockStart: '2026-04-01 01:10:00' });
    let runs = 0;
    const job: ScheduledJob = {
      name: 'waiting', file: 'waiting.yaml', cron: '* * * * * *', catchUp: 'once', baseUrl: emu.url,
      run: async () => {
        runs += 1;
        return outcome('ok', new Date());
      },
    };
    const { scheduler, stop, lines } = setUp([job]);
    await scheduler.start();
    const deadline = Date.now() + 5_000;
    while (!lines.some((l) => /waiting until it ends/.test(l)) && Date.now() < deadline) await sleep(100);
    const stopping = Date.now();
    stop.abort('SIGTERM');
    await scheduler.finished();
    expect(Date.now() - stopping).toBeLessThan(2_000);
    expect(runs).toBe(0);
    expect(lines.join('\n')).toMatch(/waiting: not started \(due at .*\): the scheduler is stopping/);
  });
});
