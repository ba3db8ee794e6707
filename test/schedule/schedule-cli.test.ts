/**
 * `wds-files schedule` as a child process with real pipeline files, real signals and the emulator
 * in-process: one run at a time even when a run outlasts the period, SIGTERM mid-run, a file that
 * does not load, and /healthz, /metrics and the failure notification a monitor relies on.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import { finished, runCli, spawnCli, stderrMatching } from '../helpers/cli-process.js';
import { verifyExport } from '../../src/pipelines/verify.js';

const emulator = useEmulator({ seed: 'samples/company' });
const env = () => ({ WDS_BASE_URL: emulator().url, WDS_CONSUMER_KEY: KEY, WDS_CONSUMER_SECRET: SECRET });

afterEach(async () => {
  await emulator().control('DELETE', '/faults');
});

function pipelineFile(folder: string, name: string, body: string): string {
  const file = join(folder, `${name}.yaml`);
  writeFileSync(file, `name: ${name}\n${body}`);
  return file;
}

describe('wds-files schedule', () => {
  it('runs a 2-second cron at least 3 times in 10 s and never two at once, though its first run outlasts the period', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'wds-schedule-cli-'));
    // Every download of the first run waits 1.5 s (the run takes about 3 s); later runs find the photos present and download nothing.
    await emulator().control('POST', '/faults', { storage: { latency_ms: 1_500 } });
    const file = pipelineFile(folder, 'photos-every-2s', 'schedule: "*/2 * * * * *"\nfrom: { service: photos }\nto: { folder: out }\n');
    const child = spawnCli(['schedule', file], env());
    const done = finished(child);
    await stderrMatching(child, /scheduling 1 pipeline/, 20_000);
    await sleep(10_000);
    child.kill('SIGTERM');
    const run = await done;
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stderr.split('\n');
    const events = lines.filter((l) => / photos-every-2s: (starting|ok|partial|failed|interrupted)\b/.test(l)).map((l) => (/: starting/.test(l) ? 'start' : 'end'));
    // Each start is followed by its end before the next start.
    expect(events.join(' ')).toMatch(/^(start end )*(start end|start)?$/);
    expect(events.filter((e) => e === 'end').length).toBeGreaterThanOrEqual(3);
    expect(run.stderr).toMatch(/photos-every-2s: due at .* while the run started .* is still going; skipped \(one run at a time\)/);
    expect(run.stderr).not.toMatch(/photos-every-2s: failed/);
    expect(run.stderr).toMatch(/photos-every-2s: ok, 26 files, \d+(\.\d)? KB, \d+ s/);
    const verified = await verifyExport(join(folder, 'out'));
    expect(verified.problems).toEqual([]);
    expect(verified.files).toBe(26);
  }, 40_000);

  it('SIGTERM mid-run lets the run end cleanly, leaves its output whole, and exits 0', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'wds-schedule-cli-'));
    await emulator().control('POST', '/faults', { storage: { latency_ms: 400, bandwidth_bytes_per_s: 100_000 } });
    const file = pipelineFile(folder, 'slow-photos', 'schedule: "* * * * * *"\nfrom: { service: photos }\nto: { folder: out }\nsteps:\n  - download: { concurrency: 2 }\n');
    const child = spawnCli(['schedule', file, '--json'], env());
    const done = finished(child);
    await stderrMatching(child, /slow-photos: starting/, 20_000);
    await sleep(2_500);
    child.kill('SIGTERM');
    const run = await done;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/slow-photos: interrupted, \d+ files?, /);
    expect(run.stderr).toMatch(/stopped \(SIGTERM\); every run under way has ended/);
    // Nothing new started after the signal.
    expect(run.stderr.match(/slow-photos: starting/g)).toHaveLength(1);
    const out = join(folder, 'out');
    const verified = await verifyExport(out);
    expect(verified.problems).toEqual([]);
    expect(verified.files).toBeGreaterThan(0);
    expect(verified.files).toBeLessThan(26);
    // --json: the run's summary on stdout, counting exactly the files the folder holds.
    const summaries = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as { pipeline: string; status: string; files: number; exit_code: number });
    expect(summaries).toEqual([expect.objectContaining({ pipeline: 'slow-photos', status: 'interrupted', files: verified.files })]);
    expect(run.stderr).toContain(`slow-photos: interrupted, ${verified.files} file`);
    const leftovers = readdirSync(join(out, 'photos')).filter((name) => /tmp|partial/i.test(name));
    expect(leftovers).toEqual([]);
  }, 40_000);

  it('a pipeline file that does not load is named with its line and column, and nothing starts (exit 2)', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'wds-schedule-cli-'));
    pipelineFile(folder, 'good', 'schedule: "0 4 * * *"\nfrom: { service: photos }\nto: { folder: out }\n');
    pipelineFile(folder, 'bad', 'schedule: "0 4 * *"\nfrom: { service: photos }\nto: { folder: out }\n');
    const run = await runCli(['schedule', folder], env());
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`${join(folder, 'bad.yaml').replace(/[.\\/]/g, '\\$&')}:2:11: .*5 fields`));
    expect(run.stderr).not.toMatch(/scheduling/);
  }, 20_000);

  it('a second scheduler of the same pipeline that finds its lock held reports the run skipped (busy): /healthz stays 200 and nobody is notified', async () => {
    const received: string[] = [];
    const receiver: Server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        received.push(text);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const notifyUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const children: ReturnType<typeof spawnCli>[] = [];
    try {
      const folder = mkdtempSync(join(tmpdir(), 'wds-schedule-cli-'));
      // Every download waits 8 s: the first scheduler's run holds the folder's lock while the second starts and tries.
      await emulator().control('POST', '/faults', { storage: { latency_ms: 8_000 } });
      const file = pipelineFile(folder, 'twice', `schedule: "*/2 * * * * *"\nfrom: { service: photos }\nto: { folder: out }\nnotify: { url: "${notifyUrl}", on: [failure] }\n`);
      const first = spawnCli(['schedule', file], env());
      children.push(first);
      const firstDone = finished(first);
      await stderrMatching(first, /twice: starting/, 20_000);
      const second = spawnCli(['schedule', file, '--status-port', '0'], env());
      children.push(second);
      const secondDone = finished(second);
      const start = await stderrMatching(second, /status: http/, 20_000);
      const status = /status: (http:\/\/127\.0\.0\.1:\d+)\/healthz/.exec(start)![1]!;
      const said = await stderrMatching(second, /twice: skipped \(busy\)/, 20_000);
      expect(said).toMatch(/another run holds .*\.wds-lock/);
      expect((await fetch(`${status}/healthz`)).status).toBe(200);
      const metrics = await (await fetch(`${status}/metrics`)).text();
      expect(metrics).toMatch(/wds_pipeline_runs_skipped_total\{pipeline="twice",reason="busy"\} [1-9]/);
      expect(metrics).toMatch(/wds_pipeline_runs_total\{pipeline="twice",status="failed"\} 0/);
      second.kill('SIGTERM');
      const two = await secondDone;
      expect(two.code, two.stderr).toBe(0);
      expect(two.stderr).not.toMatch(/twice: failed/);
      // The first scheduler's run is still going: any notification so far would be the second's.
      expect(received).toEqual([]);
      first.kill('SIGTERM');
      expect((await firstDone).code).toBe(0);
    } finally {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  }, 90_000);

  it('serves /healthz and /metrics, turns /healthz 503 after a failing run, and POSTs the failure to the notify URL', async () => {
    const received: { body: any; path: string }[] = [];
    const receiver: Server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        received.push({ path: req.url ?? '', body: JSON.parse(text) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const notifyUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    try {
      const folder = mkdtempSync(join(tmpdir(), 'wds-schedule-cli-'));
      mkdirSync(join(folder, 'pipelines'));
      // Daily at the service-time hour (Tokyo, UTC+9) twelve hours from now: it cannot come due during the test.
      const awayHour = (new Date().getUTCHours() + 9 + 12) % 24;
      pipelineFile(join(folder, 'pipelines'), 'good', `schedule: "0 ${awayHour} * * *"\nfrom: { service: photos }\nto: { folder: ../good }\n`);
      pipelineFile(join(folder, 'pipelines'), 'refused', [
        'schedule: "*/2 * * * * *"',
        'connection: { consumer_secret: not-the-secret }',
        'from: { service: photos }',
        'to: { folder: ../refused }',
        `notify: { url: "${notifyUrl}", on: [failure] }`,
        '',
      ].join('\n'));
      // A run takes at least two slow API answers, so /healthz is asked before the first one can fail.
      await emulator().control('POST', '/faults', { api: { latency_ms: 300 } });
      const child = spawnCli(['schedule', join(folder, 'pipelines'), '--status-port', '0'], env());
      const done = finished(child);
      const start = await stderrMatching(child, /scheduling 2 pipelines/, 20_000);
      const status = /status: (http:\/\/127\.0\.0\.1:\d+)\/healthz/.exec(start)![1]!;
      const healthy = await fetch(`${status}/healthz`);
      expect(healthy.status).toBe(200);
      await stderrMatching(child, /refused: failed/, 10_000);
      const failing = await fetch(`${status}/healthz`);
      expect(failing.status).toBe(503);
      const health = (await failing.json()) as { failing: { pipeline: string; error?: string }[] };
      expect(health.failing.map((f) => f.pipeline)).toEqual(['refused']);
      expect(health.failing[0]!.error).toMatch(/consumer key or consumer secret/);
      const metrics = await (await fetch(`${status}/metrics`)).text();
      expect(metrics).toMatch(/wds_pipeline_runs_total\{pipeline="refused",status="failed"\} [1-9]/);
      expect(metrics).toMatch(/wds_pipeline_runs_total\{pipeline="good",status="ok"\} 0/);
      expect(metrics).toMatch(/# TYPE wds_pipeline_last_success_timestamp_seconds gauge/);
      const deadline = Date.now() + 5_000;
      while (!received.length && Date.now() < deadline) await sleep(100);
      child.kill('SIGTERM');
      const run = await done;
      expect(run.code, run.stderr).toBe(0);
      expect(received.length).toBeGreaterThanOrEqual(1);
      expect(received[0]!.path).toBe('/hook');
      expect(received[0]!.body).toMatchObject({ event: 'failure', pipeline: 'refused', status: 'failed', exit_code: 1 });
      expect(JSON.stringify(received)).not.toContain('not-the-secret');
      expect(run.stderr).not.toContain('not-the-secret');
      expect(readFileSync(join(folder, 'pipelines', 'refused.yaml'), 'utf8')).toContain('not-the-secret');
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  }, 40_000);
});
