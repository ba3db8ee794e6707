/**
 * The consumer secret out of the process list: `--consumer-secret-file FILE` (and a pipeline
 * file's `connection.consumer_secret_file`) reads it from a file, so `ps` never shows it; a secret
 * given as a flag is warned about and, once the CLI has started, masked in the command line the
 * kernel shows (Linux). The built CLI as a child process, watched with `ps -o args= -p PID`.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { finished, runCli, spawnCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';

const CHILD_TIMEOUT_MS = 90_000;
const KEY = 'secret-file-key';
const SECRET = 'secret-file-s3cr3t-7c19e2';
const emu = useEmulator({ seed: 'samples/company', consumerKey: KEY, consumerSecret: SECRET });
afterEach(async () => {
  await emu().control('POST', '/faults', { api: { latency_ms: 0 } });
});

/** What `ps` shows as the process's command line, or null once it has ended. */
function psArgs(pid: number): string | null {
  try {
    return execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}

/** Runs the CLI, reading its command line with ps every 25 ms until it ends: what it exited with, and every line seen. */
async function watched(args: string[], env: NodeJS.ProcessEnv = {}, from?: RegExp): Promise<{ code: number | null; stderr: string; seen: string[] }> {
  const child = spawnCli(args, env);
  const done = finished(child);
  let ended = false;
  void done.then(() => (ended = true));
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const seen: string[] = [];
  while (!ended) {
    const line = psArgs(child.pid!);
    // A child that has ended but not been reaped shows only its name, `<defunct>`.
    if (line && !line.includes('<defunct>') && (!from || from.test(stderr))) seen.push(line);
    await sleep(25);
  }
  const run = await done;
  return { code: run.code, stderr: run.stderr, seen };
}

it('--consumer-secret-file: the secret never shows in ps while the export runs; exit 0', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-secret-file-');
  const file = join(dir, 'secret');
  writeFileSync(file, `${SECRET}\n`, { mode: 0o600 });
  // Each request takes a while, so that ps looks at the run many times.
  await emu().control('POST', '/faults', { api: { latency_ms: 300 } });
  const run = await watched(['photos', 'export', '--out', join(dir, 'photos'), '--base-url', emu().url, '--consumer-key', KEY, '--consumer-secret-file', file]);
  expect(run.code, run.stderr).toBe(0);
  expect(run.seen.length).toBeGreaterThan(5);
  expect(run.seen.some((line) => line.includes('--consumer-secret-file'))).toBe(true);
  for (const line of run.seen) expect(line).not.toContain(SECRET);
  expect(run.stderr).not.toContain('warning');
});

it('--consumer-secret as a flag: warned about, and masked in ps once the CLI has started', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-secret-flag-');
  await emu().control('POST', '/faults', { api: { latency_ms: 300 } });
  // From the warning on: it is written once the title is set, which Node's start-up precedes.
  const run = await watched(['photos', 'export', '--out', join(dir, 'photos'), '--base-url', emu().url, '--consumer-key', KEY, '--consumer-secret', SECRET], {}, /warning/);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stderr).toContain('wds-files: warning: --consumer-secret on the command line can be read by other users');
  expect(run.stderr).toContain('--consumer-secret-file FILE');
  expect(run.seen.length).toBeGreaterThan(5);
  for (const line of run.seen) {
    expect(line).not.toContain(SECRET);
    // Node 20 and 22 show the masked command line; Node 24 shows the title alone, which holds no secret either.
    if (Number(process.versions.node.split('.')[0]) < 24) expect(line).toContain('--consumer-secret [REDACTED]');
  }
});

it('a secret file that cannot be read, or is empty, or given with the flag: a usage error naming it, exit 2', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-secret-file-');
  const connection = ['--base-url', emu().url, '--consumer-key', KEY];
  const missing = await runCli(['api', 'GET', '/members', ...connection, '--consumer-secret-file', join(dir, 'nothing')]);
  expect(missing.code, missing.stderr).toBe(2);
  expect(missing.stderr).toContain(`--consumer-secret-file ${join(dir, 'nothing')} cannot be read (ENOENT)`);
  writeFileSync(join(dir, 'empty'), '\n');
  const empty = await runCli(['api', 'GET', '/members', ...connection, '--consumer-secret-file', join(dir, 'empty')]);
  expect(empty.code, empty.stderr).toBe(2);
  expect(empty.stderr).toContain('its first line is empty');
  writeFileSync(join(dir, 'secret'), SECRET);
  const both = await runCli(['api', 'GET', '/members', ...connection, '--consumer-secret-file', join(dir, 'secret'), '--consumer-secret', 'other', '-q']);
  expect(both.code, both.stderr).toBe(2);
  expect(both.stderr).toContain('give --consumer-secret or --consumer-secret-file, not both');
  // A file with no newline at its end is read the same.
  const read = await runCli(['api', 'GET', '/members', ...connection, '--consumer-secret-file', join(dir, 'secret')]);
  expect(read.code, read.stderr).toBe(0);
});

it('a pipeline file\'s connection.consumer_secret_file, relative to the pipeline file: the run connects', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-secret-pipeline-');
  writeFileSync(join(dir, 'wds-secret'), `${SECRET}\n`);
  const file = join(dir, 'p.yaml');
  writeFileSync(file, ['name: secret-file', 'from: { service: photos }', 'to: { folder: out }', 'connection:', `  base_url: ${emu().url}`, `  consumer_key: ${KEY}`, '  consumer_secret_file: wds-secret', ''].join('\n'));
  const run = await runCli(['run', file, '--json']);
  expect(run.code, run.stderr).toBe(0);
  expect(JSON.parse(run.stdout)).toMatchObject({ command: 'run', status: 'ok' });
  expect(run.stdout + run.stderr).not.toContain(SECRET);
});
