/**
 * `wds-files schedule --status-port` over three starts of the CLI sharing one state folder, with
 * real SIGTERMs: a failing pipeline, then a run of it cut short by the stop, then a restart. The
 * restart's /healthz still names the failure (a stopped run says nothing of the pipeline's health)
 * until a run goes to its end and succeeds; the run takes over the lock a killed run left behind,
 * saying so once under the pipeline's name.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import { finished, spawnCli, stderrMatching } from '../helpers/cli-process.js';
import { verifyExport } from '../../src/pipelines/verify.js';

const emulator = useEmulator({ seed: 'samples/company' });

afterEach(async () => {
  await emulator().control('DELETE', '/faults');
});

/** The pid of a process that has ended. */
function deadPid(): number {
  return Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout);
}

it('a failure stays on /healthz through a run cut short by SIGTERM and a restart, until a run succeeds', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'wds-schedule-restart-'));
  const state = mkdtempSync(join(tmpdir(), 'wds-schedule-state-'));
  const file = join(folder, 'nightly.yaml');
  writeFileSync(file, [
    'name: nightly',
    'schedule: "*/2 * * * * *"',
    'connection: { consumer_secret: "${TEST_SECRET}" }',
    'from: { service: photos }',
    'steps:',
    '  - download: { concurrency: 1 }',
    'to: { archive: archive }',
    '',
  ].join('\n'));
  const archive = join(folder, 'archive');
  const env = (secret: string) => ({ XDG_STATE_HOME: state, WDS_BASE_URL: emulator().url, WDS_CONSUMER_KEY: KEY, TEST_SECRET: secret });

  // 1. The service refuses the secret: the run fails.
  const failing = spawnCli(['schedule', file], env('not-the-secret'));
  const failingDone = finished(failing);
  await stderrMatching(failing, /nightly: failed, /, 20_000);
  failing.kill('SIGTERM');
  expect((await failingDone).code).toBe(0);

  // 2. The secret fixed, the next run is stopped half way by SIGTERM (a deploy, a reboot).
  await emulator().control('POST', '/faults', { storage: { latency_ms: 400 } });
  const stopped = spawnCli(['schedule', file], env(SECRET));
  const stoppedDone = finished(stopped);
  await stderrMatching(stopped, /nightly: starting/, 20_000);
  await sleep(2_000);
  stopped.kill('SIGTERM');
  const second = await stoppedDone;
  expect(second.code, second.stderr).toBe(0);
  expect(second.stderr).toMatch(/nightly: interrupted, /);
  const saved = JSON.parse(readFileSync(join(state, 'wds-files', 'schedule', 'nightly.json'), 'utf8')) as { last_run: { status: string } };
  expect(saved.last_run.status).toBe('interrupted');

  // A scheduler killed mid-run left its lock in the archive.
  const dead = deadPid();
  writeFileSync(join(archive, '.wds-lock'), `${JSON.stringify({ pid: dead, host: hostname(), command: 'wds-files schedule (nightly)', started_at: new Date().toISOString(), token: 'left-behind' })}\n`);

  // 3. The restart: the last run that went to its end failed, so /healthz says so from the start.
  const restarted = spawnCli(['schedule', file, '--status-port', '0'], env(SECRET));
  const restartedDone = finished(restarted);
  const start = await stderrMatching(restarted, /status: (http:\/\/127\.0\.0\.1:\d+)\/healthz/, 20_000);
  const status = /status: (http:\/\/127\.0\.0\.1:\d+)\/healthz/.exec(start)![1]!;
  const unhealthy = await fetch(`${status}/healthz`);
  expect(unhealthy.status).toBe(503);
  const body = (await unhealthy.json()) as { status: string; failing: { pipeline: string; error?: string }[] };
  expect(body.status).toBe('failing');
  expect(body.failing.map((f) => f.pipeline)).toEqual(['nightly']);
  expect(body.failing[0]!.error).toMatch(/consumer key or consumer secret/);
  expect(body.failing[0]!.error).not.toContain('not-the-secret');

  // The run that continues the stopped snapshot succeeds, and the pipeline is healthy again.
  await emulator().control('DELETE', '/faults');
  const ran = await stderrMatching(restarted, /nightly: ok, /, 30_000);
  expect((await fetch(`${status}/healthz`)).status).toBe(200);
  restarted.kill('SIGTERM');
  const third = await restartedDone;
  expect(third.code, third.stderr).toBe(0);
  const lockLine = `nightly: took over the lock ${join(archive, '.wds-lock')} of an earlier run (pid ${dead} on ${hostname()} had ended)`;
  expect(ran).toContain(lockLine);
  expect(third.stderr).not.toMatch(/nightly: nightly:/);
  const latest = readFileSync(join(archive, 'latest'), 'utf8').trim();
  expect((await verifyExport(join(archive, 'snapshots', latest))).problems).toEqual([]);
}, 120_000);
