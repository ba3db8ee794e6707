/**
 * `legacy api` as a user runs it, the real CLI against the emulator: a read printed as JSON with
 * passwords masked, a dry-run update that changes nothing, an update followed with --wait to its
 * end (the department is then there through v2), a verdict of NG exiting 3, and an update whose
 * answer was lost reported unknown, never sent again.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, expect, it } from 'vitest';
import { SECRET, useEmulator } from '../helpers/emulator.js';
import { connectionArgs, runCli, type CliRun } from '../helpers/cli-process.js';
import { SAMPLE_COMPANY_DIR } from '../../src/cli/paths.js';

// CLI children on a machine shared by four test files at once: their start-up alone can take seconds.
const CHILD_TIMEOUT_MS = 90_000;
const emu = useEmulator({ seed: SAMPLE_COMPANY_DIR, maintenance: false });

// Each run takes a token, and the legacy interface issues 5 in 60 minutes: an hour of service time passes between tests.
beforeEach(async () => {
  await emu().control('POST', '/clock', { advance_seconds: 3601 });
});

const legacyApi = (...args: string[]): Promise<CliRun> => runCli(['legacy', 'api', ...args, ...connectionArgs(emu())]);

async function departmentCodes(): Promise<string[]> {
  // A fresh token: the clock moves by hours between tests, past the helper's cached one.
  const res = await fetch(`${emu().url}/api/v2.0/departments`, { headers: { 'Service-Token': await emu().token() } });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { department_data: { code: string }[] };
  return body.department_data.map((d) => d.code);
}

const LEGAL = JSON.stringify({
  departments: [{ department_code1: '1000', department_name1: '本社 / Head Office', department_code2: '1900', department_name2: '法務部 / Legal', memo: 'added through v1' }],
});

it('a read: the answer as JSON on stdout, passwords masked, labels readable, no secret anywhere', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const run = await legacyApi('/user', '-v');
  expect(run.code, run.stderr).toBe(0);
  // -v: a line per request, the path alone; neither the consumer secret nor a token is ever printed.
  expect(run.stderr).toMatch(/^POST \/api\/v1\.2\/get_token 200 \d+ ms$/m);
  expect(run.stderr).toMatch(/^POST \/api\/v1\.2\/user 200 \d+ ms$/m);
  expect(`${run.stdout}${run.stderr}`).not.toContain(SECRET);
  expect(`${run.stdout}${run.stderr}`).not.toMatch(/access_token|X-SERVICE-TOKEN/i);
  const answer = JSON.parse(run.stdout) as { headers: Record<string, string>; users: { email: string; password: string; password_locked: unknown }[] };
  expect(answer.users.length).toBeGreaterThan(0);
  for (const user of answer.users) {
    expect(user.password).toBe('[REDACTED]');
    expect(typeof user.password_locked).toBe('boolean');
  }
  expect(answer.headers.password).not.toBe('[REDACTED]');
  expect(answer.headers.password_locked).not.toBe('[REDACTED]');

  const departments = await legacyApi('/api/v1.0/department');
  expect(departments.code, departments.stderr).toBe(0);
  const listed = JSON.parse(departments.stdout) as { status: string; departments: Record<string, string>[] };
  expect(listed.status).toBe('OK');
  expect(listed.departments.map((d) => d.department_code1)).toContain('1000');
});

it('a dry-run update answers its verdict and changes nothing; a verdict of NG exits 3', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const before = await departmentCodes();
  const ok = await legacyApi('/department/add', '--data', LEGAL, '--dry-run');
  expect(ok.code, ok.stderr).toBe(0);
  expect(JSON.parse(ok.stdout)).toMatchObject({ status: 'OK' });
  expect(await departmentCodes()).toEqual(before);

  // Add cannot describe a department that exists already.
  const existing = JSON.stringify({ departments: [{ department_code1: '1000', department_name1: '本社 / Head Office' }] });
  const ng = await legacyApi('/department/add', '--data', existing, '--dry-run');
  expect(ng.code, ng.stderr).toBe(3);
  const verdict = JSON.parse(ng.stdout) as { status: string; errors: string[] };
  expect(verdict.status).toBe('NG');
  expect(verdict.errors.join(' ')).toContain('1000');
  expect(await departmentCodes()).toEqual(before);
});

it('--wait follows the update to its end; the department is then there through v2', { timeout: CHILD_TIMEOUT_MS }, async () => {
  expect(await departmentCodes()).not.toContain('1900');
  const run = await legacyApi('/department/add', '--data', LEGAL, '--wait');
  expect(run.code, run.stderr).toBe(0);
  const task = JSON.parse(run.stdout) as { progress_id: unknown; status: string };
  expect(task.status).toBe('OK');
  expect(['number', 'string']).toContain(typeof task.progress_id);
  expect(await departmentCodes()).toContain('1900');
});

it('an update whose answer is cut after it arrived: outcome unknown in the report, UPDATE_OUTCOME_UNKNOWN in the JSON line, exit 1 as with api, sent once', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const folder = mkdtempSync(join(tmpdir(), 'wds-legacy-unknown-'));
  const route = 'POST /v1/department/add';
  const sent = async (): Promise<number> => ((await emu().control('GET', '/stats')).requests[route] ?? 0) as number;
  const before = await sent();
  const data = JSON.stringify({ departments: [{ department_code1: '1000', department_name1: '本社 / Head Office', department_code2: '1950', department_name2: '監査部 / Audit' }] });
  // The service takes the update, then the connection is cut before its answer.
  await emu().control('POST', '/faults', { api: { reset_rate: 1, path_contains: '/api/v1.2/department/add', method: 'POST', max_faults: 1 } });
  try {
    const run = await legacyApi('/department/add', '--data', data, '--json', '--report', join(folder, 'report.json'));
    expect(run.code, run.stderr).toBe(1);
    expect(await sent()).toBe(before + 1);
    const line = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(line).toMatchObject({ command: 'legacy api', status: 'unknown', exit_code: 1, error_code: 'UPDATE_OUTCOME_UNKNOWN' });
    const report = JSON.parse(readFileSync(join(folder, 'report.json'), 'utf8')) as Record<string, any>;
    expect(report).toMatchObject({ command: 'legacy api', outcome: 'unknown', exit_code: 1, error: { code: 'UPDATE_OUTCOME_UNKNOWN' }, request: { path: '/department/add' } });
    expect(report.requests.sent).toBe(2); // the token and the update, not sent again
    expect(String(line.error)).toMatch(/may or may not have been applied/);
    // How to check before sending again: the data read back, or the task if its progress_id is known.
    expect(run.stderr).toMatch(/not be sent again blindly/);
    expect(run.stderr).toContain('wds-files legacy api /department');
    expect(run.stderr).toContain('/task/');
    expect(`${run.stdout}${run.stderr}${JSON.stringify(report)}`).not.toContain(SECRET);
  } finally {
    await emu().control('DELETE', '/faults');
  }
  // It was applied: the department is there once its task has run, and a blind resend would have added it twice.
  await emu().control('GET', '/tasks/drain');
  expect(await departmentCodes()).toContain('1950');
});
