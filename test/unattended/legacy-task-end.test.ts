/**
 * The legacy interface when nobody watches: an update whose task ends ERROR (the control API's
 * `task_error_rate`) is told to the user with exit 3 and changes nothing, through the CLI's
 * `legacy api --wait` and the SDK alike; Ctrl-C (a real SIGINT) while `legacy api --wait` follows
 * a task exits 130 at once, says how to follow the task, and prints no secret.
 */
import { beforeEach, expect, it } from 'vitest';
import { SECRET, useEmulator } from '../helpers/emulator.js';
import { connectionArgs, finished, runCli, spawnCli } from '../helpers/cli-process.js';
import { SAMPLE_COMPANY_DIR } from '../../src/cli/paths.js';
import { LegacyClient } from '../../src/client/v1/index.js';
import { KEY } from '../helpers/emulator.js';

// CLI children on a machine shared by other test files: their start-up alone can take seconds.
const CHILD_TIMEOUT_MS = 90_000;
const emu = useEmulator({ seed: SAMPLE_COMPANY_DIR, maintenance: false });

// Each run takes a token, and the legacy interface issues 5 in 60 minutes: an hour of service time passes between tests.
beforeEach(async () => {
  await emu().control('POST', '/clock', { advance_seconds: 3601 });
  await emu().control('DELETE', '/faults');
});

const LEGAL = JSON.stringify({
  departments: [{ department_code1: '1000', department_name1: '本社 / Head Office', department_code2: '1900', department_name2: '法務部 / Legal' }],
});

async function departmentCodes(): Promise<string[]> {
  const res = await fetch(`${emu().url}/api/v2.0/departments`, { headers: { 'Service-Token': await emu().token() } });
  const body = (await res.json()) as { department_data: { code: string }[] };
  return body.department_data.map((d) => d.code);
}

it('a task that ends ERROR: legacy api --wait prints it with its errors, says so on stderr and exits 3; nothing changed, and the update goes through once sent again', { timeout: CHILD_TIMEOUT_MS }, async () => {
  await emu().control('POST', '/faults', { api: { task_error_rate: 1, path_contains: '/department/add', max_faults: 1 } });
  const run = await runCli(['legacy', 'api', '/department/add', '--data', LEGAL, '--wait', ...connectionArgs(emu())]);
  expect(run.code, run.stdout + run.stderr).toBe(3);
  const task = JSON.parse(run.stdout) as { progress_id: number; status: string; errors: string[] };
  expect(task).toEqual({ progress_id: expect.any(Number), status: 'ERROR', errors: [`task ${task.progress_id} failed unexpectedly; nothing was changed`] });
  expect(run.stderr).toContain(`wds-files: task ${task.progress_id} ended ERROR, an unexpected failure at the service: task ${task.progress_id} failed unexpectedly; nothing was changed; `
    + 'read the data before sending the update again, and report it to the service\'s support if it happens again');
  expect(`${run.stdout}${run.stderr}`).not.toContain(SECRET);
  expect(await departmentCodes()).not.toContain('1900');

  // The fault is spent: the same update, sent again, is carried out.
  await emu().control('POST', '/clock', { advance_seconds: 3601 });
  const again = await runCli(['legacy', 'api', '/department/add', '--data', LEGAL, '--wait', ...connectionArgs(emu())]);
  expect(again.code, again.stdout + again.stderr).toBe(0);
  expect(JSON.parse(again.stdout)).toMatchObject({ status: 'OK' });
  expect(await departmentCodes()).toContain('1900');
});

it('the SDK answers a task that ended ERROR with its errors, and /task/ID reads the same later', async () => {
  await emu().control('POST', '/faults', { api: { task_error_rate: 1, path_contains: '/department/add', max_faults: 1 } });
  const client = new LegacyClient({ baseUrl: emu().url, consumerKey: KEY, consumerSecret: SECRET, limits: false, stateFile: false, poll: { intervalMs: 10, maxIntervalMs: 50 } });
  try {
    const answer = await client.request('/department/add', { departments: [{ department_code1: '1000', department_name1: '本社 / Head Office', department_code2: '1901', department_name2: 'Audit' }] });
    const id = (answer.body as { progress_id: number }).progress_id;
    const task = await client.tasks.wait(id);
    expect(task).toEqual({ progressId: id, status: 'ERROR', errors: [`task ${id} failed unexpectedly; nothing was changed`] });
    expect(await client.tasks.get(id)).toEqual(task);
    expect(await departmentCodes()).not.toContain('1901');
  } finally {
    await client.close();
  }
});

it('v2 tasks end ERROR the same way under task_error_rate, and the member keeps its data', async () => {
  await emu().control('POST', '/faults', { api: { task_error_rate: 1, path_contains: '/members', method: 'PATCH', max_faults: 1 } });
  const members = await emu().api('GET', '/members');
  const member = (members.body as { member_data: { code: string; name: string }[] }).member_data[0]!;
  const patched = await emu().api('PATCH', '/members', { member_data: [{ code: member.code, name: 'Changed Name' }] });
  expect(patched.status, JSON.stringify(patched.body)).toBe(200);
  const task = await emu().waitTask(patched.body.task_id);
  expect(task.status).toBe('ERROR');
  const after = await emu().api('GET', '/members');
  expect((after.body as { member_data: { code: string; name: string }[] }).member_data.find((m) => m.code === member.code)?.name).toBe(member.name);
});

it('Ctrl-C while legacy api --wait follows a task: exit 130 within seconds, the task named to follow it, no secret printed', { timeout: CHILD_TIMEOUT_MS }, async () => {
  // The service clock all but stands still: the task stays WAITING, and the CLI keeps polling.
  await emu().control('POST', '/clock', { speed: 0.000001 });
  try {
    const child = spawnCli(['legacy', 'api', '/department/add', '--data', LEGAL, '--wait', '-v', ...connectionArgs(emu())]);
    const ended = finished(child);
    let stderr = '';
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (/polling task \d+ again/.test(stderr)) resolve();
      });
      child.once('close', () => reject(new Error(`ended before it polled: ${stderr}`)));
    });
    const signalled = Date.now();
    child.kill('SIGINT');
    const run = await ended;
    expect(Date.now() - signalled).toBeLessThan(5_000);
    expect(run.code, run.stdout + run.stderr).toBe(130);
    expect(run.stderr).toMatch(/wds-files: stopped by SIGINT; the update goes on at the service: follow it with wds-files legacy api \/task\/\d+/);
    expect(run.stdout).toBe('');
    expect(`${run.stdout}${run.stderr}`).not.toContain(SECRET);
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/access_token|X-SERVICE-TOKEN/i);
  } finally {
    await emu().control('POST', '/clock', { speed: 1 });
  }
});
