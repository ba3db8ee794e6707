/**
 * The scheduler's logic in-process: one run per pipeline at a time, missed runs caught up once or
 * skipped, and the health and metrics a monitor reads. (The nightly window: maintenance-window.test.)
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { KEY, SECRET, launch } from '../helpers/emulator.js';
import { loadPipelineFile } from '../../src/pipeline-files/load.js';
import { lockFileFor } from '../../src/pipeline-files/run.js';
import { jobOf } from '../../src/schedule/pipelines.js';
import { Scheduler } from '../../src/schedule/scheduler.js';
import { acquireTargetLock } from '../../src/util/target-lock.js';
import { ScheduleState } from '../../src/schedule/state.js';
import { startStatusServer, type StatusServer } from '../../src/schedule/status-server.js';
import type { RunOutcome, ScheduledJob } from '../../src/schedule/types.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function outcome(status: RunOutcome['status'], started: Date, extra: Partial<RunOutcome> = {}): RunOutcome {
  const finished = new Date();
  return { status, started_at: started.toISOString(), finished_at: finished.toISOString(), duration_ms: finished.getTime() - started.getTime(), files: 0, bytes: 0, ...extra };
}

/** Resolves once `done` holds, looking every 20 ms; fails after 10 s. */
async function until(done: () => boolean): Promise<void> {
  for (let waited = 0; !done(); waited += 20) {
    if (waited > 10_000) throw new Error('waited 10 s in vain');
    await sleep(20);
  }
}

function setUp(jobs: ScheduledJob[], extra: { now?: () => Date; stateFolder?: string } = {}) {
  const lines: string[] = [];
  const stop = new AbortController();
  const state = new ScheduleState(extra.stateFolder ?? mkdtempSync(join(tmpdir(), 'wds-schedule-')));
  const scheduler = new Scheduler(jobs, { timeZone: 'Asia/Tokyo', signal: stop.signal, log: (line) => lines.push(line), state, now: extra.now });
  cleanups.push(async () => {
    stop.abort('SIGTERM');
    await scheduler.finished();
  });
  return { scheduler, stop, lines, state };
}

describe('one run per pipeline at a time', () => {
  it('runs a 2-second cron at least 3 times in 10 s, never two at once, when the first run outlasts the period', async () => {
    let running = 0;
    let most = 0;
    const starts: number[] = [];
    const job: ScheduledJob = {
      name: 'every-2s', file: 'every-2s.yaml', cron: '*/2 * * * * *', catchUp: 'once',
      run: async () => {
        const started = new Date();
        running += 1;
        most = Math.max(most, running);
        starts.push(Date.now());
        await sleep(starts.length === 1 ? 4_500 : 300);
        running -= 1;
        return outcome('ok', started, { files: 2, bytes: 100 });
      },
    };
    const { scheduler, stop, lines } = setUp([job]);
    await scheduler.start();
    await sleep(10_000);
    stop.abort('SIGTERM');
    await scheduler.finished();
    expect(starts.length).toBeGreaterThanOrEqual(3);
    expect(most).toBe(1);
    // The times due during the long first run were skipped, not queued up behind it.
    expect(lines.filter((l) => /still going; skipped/.test(l)).length).toBeGreaterThanOrEqual(1);
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(4_500);
    expect(lines.filter((l) => /^every-2s: ok, 2 files, 100 B, /.test(l)).length).toBe(starts.length);
  }, 20_000);
});

describe('missed runs', () => {
  /**
   * The minute half an hour from now: an hourly cron at it has no time near the test's, so "five
   * hours and a minute ago" holds five of its runs whatever minute the test runs in (at 12:00:21,
   * "0 * * * *" had six), and its timer does not fire while the test runs.
   */
  const awayMinute = (): number => (new Date().getUTCMinutes() + 30) % 60;
  const hourly = (name: string, catchUp: 'once' | 'skip', runs: Date[], minute = awayMinute()): ScheduledJob => ({
    name, file: `${name}.yaml`, cron: `${minute} * * * *`, catchUp,
    run: async () => {
      runs.push(new Date());
      return outcome('ok', new Date());
    },
  });

  it('are caught up once at start, whatever their number', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'wds-schedule-'));
    const state = new ScheduleState(folder);
    await state.write({ pipeline: 'hourly', handled_until: new Date(Date.now() - 5 * 3_600_000 - 60_000).toISOString() });
    const runs: Date[] = [];
    const { scheduler, lines } = setUp([hourly('hourly', 'once', runs)], { stateFolder: folder });
    await scheduler.start();
    // Polled, not slept: on a loaded machine the catch-up run may start later than 300 ms.
    await until(() => runs.length > 0 && lines.some((l) => /^hourly: ok,/.test(l)));
    await sleep(300);
    expect(runs.length).toBe(1);
    expect(lines.join('\n')).toMatch(/hourly: 5 runs were due since .* while the scheduler was not running .*; catching up once now/);
    await until(() => /"last_run"/.test(readFileSync(state.pathOf('hourly'), 'utf8')));
    const saved = JSON.parse(readFileSync(state.pathOf('hourly'), 'utf8'));
    expect(saved.last_run.status).toBe('ok');
    expect(Date.parse(saved.handled_until)).toBeGreaterThan(Date.now() - 5_000);
  });

  it('are skipped with catch_up: skip, and a restart then has nothing to catch up', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'wds-schedule-'));
    await new ScheduleState(folder).write({ pipeline: 'hourly', handled_until: new Date(Date.now() - 2 * 3_600_000 - 60_000).toISOString() });
    const runs: Date[] = [];
    const first = setUp([hourly('hourly', 'skip', runs)], { stateFolder: folder });
    await first.scheduler.start();
    await until(() => first.lines.some((l) => /skipped \(catch_up: skip\)/.test(l)));
    await sleep(300);
    expect(runs.length).toBe(0);
    expect(first.lines.join('\n')).toMatch(/hourly: 2 runs were due since .*; skipped \(catch_up: skip\)/);
    first.stop.abort('SIGTERM');
    await first.scheduler.finished();

    const second = setUp([hourly('hourly', 'once', runs)], { stateFolder: folder });
    await second.scheduler.start();
    await sleep(300);
    expect(runs.length).toBe(0);
    expect(second.lines.join('\n')).not.toMatch(/were due since|was due since/);
  });

  it('include a run cut short by the scheduler\'s stop: the next start runs its time again', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'wds-schedule-'));
    let started = false;
    const stubborn: ScheduledJob = {
      name: 'nightly', file: 'nightly.yaml', cron: '* * * * * *', catchUp: 'once',
      run: async ({ signal }) => {
        const at = new Date();
        started = true;
        await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
        return outcome('interrupted', at);
      },
    };
    const first = setUp([stubborn], { stateFolder: folder });
    await first.scheduler.start();
    await expect.poll(() => started, { timeout: 3_000 }).toBe(true);
    first.stop.abort('SIGTERM');
    await first.scheduler.finished();
    const due = first.lines.map((l) => /^nightly: starting \(due at ([^;)]+)/.exec(l)?.[1]).find(Boolean)!;
    const saved = JSON.parse(readFileSync(first.state.pathOf('nightly'), 'utf8'));
    expect(saved.last_run.status).toBe('interrupted');
    expect(Date.parse(saved.handled_until)).toBeLessThan(Date.parse(due));

    // Restarted with a daily cron of that very second (service time), now past: caught up once.
    const tokyo = new Date(Date.parse(due) + 9 * 3_600_000);
    const cron = `${tokyo.getUTCSeconds()} ${tokyo.getUTCMinutes()} ${tokyo.getUTCHours()} * * *`;
    const runs: Date[] = [];
    const second = setUp([{ ...stubborn, cron, run: async () => { runs.push(new Date()); return outcome('ok', new Date()); } }], { stateFolder: folder });
    await second.scheduler.start();
    await sleep(300);
    expect(runs.length).toBe(1);
    expect(second.lines.join('\n')).toMatch(/nightly: 1 run was due since .*; the run started .* was stopped before its end\); catching up once now/);
    second.stop.abort('SIGTERM');
    await second.scheduler.finished();
    // Its run ended: a third start has nothing to catch up.
    const third = setUp([{ ...stubborn, cron, run: async () => { runs.push(new Date()); return outcome('ok', new Date()); } }], { stateFolder: folder });
    await third.scheduler.start();
    await sleep(300);
    expect(runs.length).toBe(1);
    expect(third.lines.join('\n')).not.toMatch(/was due since/);
  });

  it('are not invented on a first start, which has no state', async () => {
    const runs: Date[] = [];
    const minute = awayMinute();
    const { scheduler, lines, state } = setUp([hourly('fresh', 'once', runs, minute)]);
    await scheduler.start();
    await sleep(300);
    expect(runs.length).toBe(0);
    const mm = String(minute).padStart(2, '0');
    expect(lines.join('\n')).toMatch(new RegExp(`fresh: scheduled "${minute} \\* \\* \\* \\*" \\(Asia/Tokyo\\) from fresh\\.yaml; next run \\d{4}-\\d\\d-\\d\\d \\d\\d:${mm}:00 service time \\(`));
    const saved = JSON.parse(readFileSync(state.pathOf('fresh'), 'utf8'));
    expect(saved.pipeline).toBe('fresh');
  });
});

describe('health and metrics', () => {
  it('/healthz turns 503 naming the pipeline whose last run failed; /metrics counts runs, files and bytes', async () => {
    let fail = false;
    const job: ScheduledJob = {
      name: 'flaky', file: 'flaky.yaml', cron: '* * * * * *', catchUp: 'once',
      run: async () => {
        const at = new Date();
        return fail ? outcome('failed', at, { error: 'the consumer key or consumer secret is not valid' }) : outcome('ok', at, { files: 3, bytes: 1234 });
      },
    };
    const { scheduler, stop } = setUp([job]);
    const server: StatusServer = await startStatusServer({ port: 0, host: '127.0.0.1', health: () => scheduler.health(), metrics: scheduler.metrics });
    cleanups.push(() => server.close());
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await scheduler.start();
    await sleep(1_500);
    const healthy = await fetch(`${server.url}/healthz`);
    expect(healthy.status).toBe(200);
    expect(await healthy.json()).toEqual({ status: 'ok', failing: [] });
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/wds_pipeline_runs_total\{pipeline="flaky",status="ok"\} [1-9]/);
    expect(metrics).toMatch(/wds_pipeline_files_total\{pipeline="flaky"\} [1-9]\d*/);
    expect(metrics).toMatch(/wds_pipeline_bytes_total\{pipeline="flaky"\} [1-9]\d*/);
    expect(metrics).toMatch(/wds_pipeline_last_success_timestamp_seconds\{pipeline="flaky"\} \d{10}/);
    expect(metrics).toMatch(/wds_pipeline_last_run_duration_seconds\{pipeline="flaky"\} /);

    fail = true;
    await sleep(1_500);
    const failing = await fetch(`${server.url}/healthz`);
    expect(failing.status).toBe(503);
    const body = (await failing.json()) as { status: string; failing: unknown[] };
    expect(body.status).toBe('failing');
    expect(body.failing).toEqual([expect.objectContaining({ pipeline: 'flaky', file: 'flaky.yaml', error: 'the consumer key or consumer secret is not valid' })]);
    expect(await (await fetch(`${server.url}/metrics`)).text()).toMatch(/wds_pipeline_runs_total\{pipeline="flaky",status="failed"\} [1-9]/);

    fail = false;
    await sleep(1_500);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    stop.abort('SIGTERM');
  });

  it('a failure from before a restart keeps /healthz at 503 until a run succeeds', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'wds-schedule-'));
    const now = new Date().toISOString();
    await new ScheduleState(folder).write({
      pipeline: 'daily', handled_until: now,
      last_run: { status: 'failed', started_at: now, finished_at: now, duration_ms: 5, files: 0, bytes: 0, error: 'disk full' },
    });
    const job: ScheduledJob = { name: 'daily', file: 'daily.yaml', cron: '0 4 * * *', catchUp: 'once', run: async () => outcome('ok', new Date()) };
    const { scheduler } = setUp([job], { stateFolder: folder });
    await scheduler.start();
    expect(scheduler.health()).toEqual({ ok: false, failing: [{ pipeline: 'daily', file: 'daily.yaml', finished_at: now, error: 'disk full' }] });
  });

  it('a run cut short after a failure keeps the failure, in health() and in the saved state for the next start; a state file of before names none', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'wds-schedule-'));
    let calls = 0;
    const job: ScheduledJob = {
      name: 'flaky', file: 'flaky.yaml', cron: '* * * * * *', catchUp: 'once',
      run: async ({ signal }) => {
        const at = new Date();
        calls += 1;
        if (calls === 1) return outcome('failed', at, { error: 'disk full' });
        await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
        return outcome('interrupted', at);
      },
    };
    const first = setUp([job], { stateFolder: folder });
    await first.scheduler.start();
    await expect.poll(() => calls, { timeout: 4_000 }).toBe(2);
    first.stop.abort('SIGTERM');
    await first.scheduler.finished();
    expect(first.scheduler.health()).toMatchObject({ ok: false, failing: [{ pipeline: 'flaky', error: 'disk full' }] });
    const saved = JSON.parse(readFileSync(first.state.pathOf('flaky'), 'utf8'));
    expect(saved.last_run.status).toBe('interrupted');
    expect(saved.last_completed_run).toMatchObject({ status: 'failed', error: 'disk full' });

    // The next start answers from the state before any run of its own.
    const second = setUp([{ ...job, cron: '0 4 * * *' }], { stateFolder: folder });
    await second.scheduler.load();
    expect(second.scheduler.health()).toMatchObject({ ok: false, failing: [{ pipeline: 'flaky', error: 'disk full' }] });

    // A state written before the last completed run was kept, whose last run was cut short, knows of no failure.
    const older = mkdtempSync(join(tmpdir(), 'wds-schedule-'));
    const now = new Date().toISOString();
    await new ScheduleState(older).write({ pipeline: 'flaky', handled_until: now, last_run: { status: 'interrupted', started_at: now, finished_at: now, duration_ms: 5, files: 0, bytes: 0 } });
    const third = setUp([{ ...job, cron: '0 4 * * *' }], { stateFolder: older });
    await third.scheduler.load();
    expect(third.scheduler.health()).toEqual({ ok: true, failing: [] });
  });
});

describe('a pipeline whose target another run holds', () => {
  it('skips its run as busy with one line that names the pipeline once and the run holding the lock; health stays ok', async () => {
    const emu = await launch({});
    cleanups.push(() => emu.close());
    const folder = mkdtempSync(join(tmpdir(), 'wds-schedule-locked-'));
    const file = join(folder, 'locked.yaml');
    writeFileSync(file, [
      'name: locked',
      `connection: { base_url: "${emu.url}", consumer_key: ${KEY}, consumer_secret: ${SECRET} }`,
      'schedule: "* * * * * *"',
      'from: { service: photos }',
      'to: { folder: out }',
      '',
    ].join('\n'));
    const pipeline = await loadPipelineFile(file, {});
    mkdirSync(join(folder, 'out'));
    const held = await acquireTargetLock(lockFileFor(pipeline), { command: 'wds-files run locked.yaml (the test)' });
    cleanups.push(() => held.release());
    const { scheduler, stop, lines } = setUp([jobOf(pipeline, { env: {}, log: () => undefined })]);
    await scheduler.start();
    await until(() => lines.some((l) => /^locked: skipped \(busy\)/.test(l)));
    expect(scheduler.health().ok).toBe(true);
    stop.abort('SIGTERM');
    await scheduler.finished();
    const busy = lines.find((l) => /^locked: skipped \(busy\)/.test(l));
    expect(busy, lines.join('\n')).toMatch(/^locked: skipped \(busy\): another run holds .*\.wds-lock \(pid \d+ on .*wds-files run locked\.yaml \(the test\)/);
    expect(busy!.split('locked:').length - 1).toBe(1);
    expect(lines.some((l) => /^locked: failed/.test(l))).toBe(false);
    // Nothing was written into the folder the other run holds.
    expect(readdirSync(join(folder, 'out'))).toEqual(['.wds-lock']);
  }, 20_000);
});
