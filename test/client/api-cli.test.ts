/**
 * `wds-files api` (src/cli/commands/api.ts) run as a child process against an in-process emulator
 * on port 0: JSON output, `--data` with `--wait`, `--dry-run`, usage errors (exit 2), errors of the
 * service (exit 1 with the stable code), and the consumer secret never printed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { addMember, companyOf, jpeg, setPhoto } from '../helpers/fixtures.js';
import { CLI_MAIN, ROOT } from '../helpers/cli-process.js';

const KEY = 'cli-key';
const SECRET = 'cli-secret-4f9a7c2e';
const emu = useEmulator({
  consumerKey: KEY, consumerSecret: SECRET, limits: { updatesPerMinute: 10_000 }, taskTiming: { waitMs: 5, runMs: 5, perItemMs: 0 },
});
const outputs: string[] = [];

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the CLI without blocking this process, which serves the emulator meanwhile. Each run gets
 * its own limiter state folder, so the CLI's 5-a-minute window never makes a test wait, and its own
 * state folder, so no run uses another's token.
 */
function cli(args: string[], connection: string[] = ['--base-url', emu().url, '--consumer-key', KEY, '--consumer-secret', SECRET]): Promise<Run> {
  // The token the CLI keeps between runs goes to XDG_STATE_HOME: a folder of the test's, not the user's.
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), 'wds-cli-')), XDG_STATE_HOME: mkdtempSync(join(tmpdir(), 'wds-cli-state-')) };
  for (const name of ['WDS_BASE_URL', 'WDS_CONSUMER_KEY', 'WDS_CONSUMER_SECRET']) delete env[name];
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [CLI_MAIN, 'api', ...args, ...connection], { cwd: ROOT, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code) => {
      outputs.push(stdout, stderr);
      done({ code, stdout, stderr });
    });
  });
}

beforeEach(async () => {
  await companyOf(emu()).reset();
  addMember(emu(), 'M001');
  addMember(emu(), 'M002');
  setPhoto(emu(), 'M001', await jpeg());
});

afterAll(() => {
  // Every run of this file, successes and failures alike: the secret was never printed.
  expect(outputs.length).toBeGreaterThan(10);
  expect(outputs.join('\n')).not.toContain(SECRET);
  expect(outputs.join('\n')).not.toContain(Buffer.from(`${KEY}:${SECRET}`).toString('base64'));
});

describe('wds-files api', () => {
  it('prints the JSON answer of a read', async () => {
    const run = await cli(['GET', '/members/face_image']);
    // Nothing but the warning that the secret was given as a flag.
    expect(run.stderr.replace(/^wds-files: warning: --consumer-secret on the command line .*\n/m, '')).toBe('');
    expect(run.code).toBe(0);
    const answer = JSON.parse(run.stdout);
    expect(answer.member_data).toEqual([expect.objectContaining({ code: 'M001', file_name: 'M001.jpg', download_url: expect.any(String) })]);
  });

  it('passes the query string and takes the path with or without /api/v2.0', async () => {
    const later = await cli(['GET', '/api/v2.0/members/face_image?updated_since=2026-04-02']);
    expect(later.code).toBe(0);
    expect(JSON.parse(later.stdout)).toEqual({ member_data: [] });
    const members = await cli(['get', 'members']);
    expect(members.code).toBe(0);
    expect(JSON.parse(members.stdout).member_data.map((m: { code: string }) => m.code)).toEqual(['M001', 'M002']);
  });

  it('sends --data and prints the task id', async () => {
    const run = await cli(['POST', '/members/delete', '--data', '{"codes":["M002"]}']);
    expect(run.code).toBe(0);
    const { task_id: taskId } = JSON.parse(run.stdout);
    expect(taskId).toEqual(expect.any(Number));
    expect(await emu().waitTask(taskId)).toMatchObject({ status: 'OK' });
    expect(Object.keys(companyOf(emu()).data.members)).toEqual(['M001']);
  });

  it('--wait follows the task and prints the final task', async () => {
    const run = await cli(['POST', '/members/delete', '--data', '{"codes":["M001"]}', '--wait']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ id: expect.any(Number), status: 'OK', messages: [] });
    expect(Object.keys(companyOf(emu()).data.members)).toEqual(['M002']);
  });

  it('--wait on a task that ends NG prints it and exits 3', async () => {
    const run = await cli(['POST', '/members/delete', '--data', '{"codes":["NOPE"]}', '--wait']);
    expect(run.code).toBe(3);
    const task = JSON.parse(run.stdout);
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual([expect.stringContaining('member NOPE')]);
  });

  it('--dry-run sends Dry-Run: 1: the task ends OK and nothing changes', async () => {
    const run = await cli(['POST', '/members/delete', '--data', '{"codes":["M001","M002"]}', '--dry-run', '--wait']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'OK' });
    expect(Object.keys(companyOf(emu()).data.members)).toEqual(['M001', 'M002']);
  });

  it('exits 2 with a message for a path that is not in API v2, a method it does not take, bad JSON, or --dry-run without a dry-run mode', async () => {
    const path = await cli(['GET', '/nope']);
    expect(path.code).toBe(2);
    expect(path.stdout).toBe('');
    expect(path.stderr).toContain('/nope is not a path of API v2');
    const method = await cli(['DELETE', '/members']);
    expect(method.code).toBe(2);
    expect(method.stderr).toMatch(/DELETE is not allowed on \/members; it takes GET, POST, PUT, PATCH/);
    const json = await cli(['POST', '/members', '--data', '{member_data']);
    expect(json.code).toBe(2);
    expect(json.stderr).toContain('--data is not valid JSON');
    const dry = await cli(['PUT', '/advanced_permissions/member', '--data', '{"advanced_permission_data":[]}', '--dry-run']);
    expect(dry.code).toBe(2);
    expect(dry.stderr).toContain('advancedPermissions.replace has no dry-run mode');
  });

  it('exits 1 with the error code for an error of the service (404, 400)', async () => {
    const missing = await cli(['GET', '/sheets/9']);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain('GET /sheets/9: no such id (404)');
    expect(missing.stderr).toContain('[NOT_FOUND]');
    const bad = await cli(['POST', '/members', '--data', '{"member_data":[]}']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('member_data must hold at least one element');
    expect(bad.stderr).toContain('[BAD_REQUEST]');
  });

  it('exits 1 with AUTHENTICATION for a wrong secret, printing neither secret', async () => {
    const wrong = `${SECRET}-typo`;
    const run = await cli(['GET', '/members'], ['--base-url', emu().url, '--consumer-key', KEY, '--consumer-secret', wrong]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('[AUTHENTICATION]');
    expect(run.stderr + run.stdout).not.toContain(wrong);
  });
});
