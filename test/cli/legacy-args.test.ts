/**
 * `legacy api` and `legacy sheet` refuse bad input before any request (exit 2), naming what was
 * typed and the rule: the sheet id, the output's extension, the interface's version and what each
 * version has, the path, the body, and an output that is a folder or a file that is not an earlier
 * download. Whatever was at --out is left as it was.
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator, type TestEmulator } from '../helpers/emulator.js';
import { tempDir } from '../helpers/export.js';
import { connectionArgs, runCli, type CliRun } from '../helpers/cli-process.js';
import { checkApiCall, checkSheetCall } from '../../src/cli/commands/legacy.js';

// CLI children on a machine shared by four test files at once: their start-up alone can take seconds.
const CHILD_TIMEOUT_MS = 90_000;
const emu = useEmulator({ maintenance: false });

type Stats = { requests: Record<string, number> };
const total = (s: Stats): number => Object.values(s.requests).reduce((a, b) => a + b, 0);

/** Runs the CLI against the emulator and expects a usage error before any request, tokens included. */
async function refused(e: TestEmulator, args: string[], ...mentions: string[]): Promise<CliRun> {
  const before = (await e.control('GET', '/stats')) as Stats;
  const run = await runCli([...args, ...connectionArgs(e)]);
  const after = (await e.control('GET', '/stats')) as Stats;
  expect(run.code, run.stderr).toBe(2);
  for (const text of mentions) expect(run.stderr).toContain(text);
  expect(run.stderr).not.toMatch(/\n\s+at /);
  expect(run.stdout).toBe('');
  expect(total(after) - total(before)).toBe(0);
  return run;
}

describe('legacy sheet', { timeout: CHILD_TIMEOUT_MS }, () => {
  it('a sheet id that is not a whole number of 0 or more', async () => {
    const out = join(tempDir(), 'sheet.csv');
    for (const id of ['abc', '-1']) {
      await refused(emu(), ['legacy', 'sheet', id, '--out', out], `SHEET_ID must be a whole number of 0 or more (0 is the base information sheet), got "${id}"`);
    }
  });

  it('an output whose name ends in neither .csv nor .jsonl', async () => {
    const dir = tempDir();
    await refused(emu(), ['legacy', 'sheet', '0', '--out', join(dir, 'sheet.json')], `--out ${join(dir, 'sheet.json')}: the file name must end in .csv or .jsonl`);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a version the legacy interface does not have, and --async before v1.1', async () => {
    const out = join(tempDir(), 'sheet.csv');
    await refused(emu(), ['legacy', 'sheet', '0', '--out', out, '--api-version', 'v2.0'], '--api-version must be v1.0, v1.1 or v1.2 (a version of the legacy interface), got "v2.0"');
    await refused(emu(), ['legacy', 'sheet', '0', '--out', out, '--async', '--api-version', 'v1.0'], '--async needs the asynchronous read, which exists from v1.1 on; v1.0 does not have it');
  });

  it('an output that is a folder, or a file that is not an earlier download (unless --force)', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'taken.csv'));
    await refused(emu(), ['legacy', 'sheet', '0', '--out', join(dir, 'taken.csv')], `--out ${join(dir, 'taken.csv')}: is a folder; name a file`);
    writeFileSync(join(dir, 'budget.csv'), 'month,amount\r\n2026-04,100\r\n');
    await refused(emu(), ['legacy', 'sheet', '0', '--out', join(dir, 'budget.csv')], `--out ${join(dir, 'budget.csv')}: is a file that is not an earlier sheet download`, '--force');
    writeFileSync(join(dir, 'notes.jsonl'), 'not json\n');
    await refused(emu(), ['legacy', 'sheet', '0', '--out', join(dir, 'notes.jsonl')], 'is a file that is not an earlier sheet download (JSON lines)');
    expect(readFileSync(join(dir, 'budget.csv'), 'utf8')).toBe('month,amount\r\n2026-04,100\r\n');
    expect(readdirSync(dir).sort()).toEqual(['budget.csv', 'notes.jsonl', 'taken.csv']);
  });
});

describe('legacy api', { timeout: CHILD_TIMEOUT_MS }, () => {
  it('a path the legacy interface does not have, an operation newer than the version, the token operation, a body that is not JSON', async () => {
    await refused(emu(), ['legacy', 'api', '/members'], '/members is not a path of the legacy interface; paths look like /user');
    await refused(emu(), ['legacy', 'api', '/sheet/0/preset', '--api-version', 'v1.0'], '/sheet/0/preset (start an asynchronous sheet read) exists from v1.1 on; v1.0 does not have it');
    await refused(emu(), ['legacy', 'api', '/get_token'], '/get_token is called for you');
    await refused(emu(), ['legacy', 'api', '/user/add', '--data', '{"users": ['], '--data is not valid JSON');
  });
});

/** The same checks without a process, for the breadth of what they refuse and take. */
describe('the checks themselves', () => {
  const api = (path: string, more: Partial<{ 'api-version': string; data: string; 'dry-run': boolean; wait: boolean }> = {}) =>
    checkApiCall({ path, 'dry-run': false, wait: false, ...more });
  const sheet = (id: string, out = 'sheet.csv', more: Partial<{ 'api-version': string; async: boolean }> = {}) =>
    checkSheetCall({ 'sheet-id': id, out, async: false, ...more });

  it('sheet ids, output names and versions', () => {
    for (const id of ['1.5', '0x10', '', ' 1', '99999999999']) expect(() => sheet(id)).toThrow(`SHEET_ID must be a whole number of 0 or more (0 is the base information sheet), got "${id}"`);
    for (const name of ['sheet.xlsx', 'sheet', 'sheet.csv.gz']) expect(() => sheet('0', name)).toThrow(`--out ${name}: the file name must end in .csv or .jsonl`);
    expect(() => sheet('0', 'sheet.csv', { 'api-version': 'v2.0' })).toThrow('--api-version must be v1.0, v1.1 or v1.2 (a version of the legacy interface), got "v2.0"');
    expect(sheet('0')).toEqual({ sheetId: 0, version: 'v1.2', format: 'csv' });
    expect(sheet('12', 'out/S.JSONL', { 'api-version': 'v1.1', async: true })).toEqual({ sheetId: 12, version: 'v1.1', format: 'jsonl' });
    expect(sheet('3', 'x.csv', { 'api-version': 'v1.0' })).toEqual({ sheetId: 3, version: 'v1.0', format: 'csv' });
  });

  it('paths, versions named in the path, dry-run, --wait and bodies', () => {
    expect(() => api('/api/v2.0/members')).toThrow('is not a path of the legacy interface, whose versions are v1.0, v1.1 or v1.2; for API v2 use wds-files api');
    expect(() => api('/sheet/abc')).toThrow('/sheet/abc is not a path of the legacy interface');
    expect(() => api('/api/v1.1/sheet/2/data/update')).toThrow('/sheet/2/data/update (partial update of a sheet) exists from v1.2 on; v1.1 does not have it');
    expect(() => api('/api/v1.1/user', { 'api-version': 'v1.2' })).toThrow('/api/v1.1/user names v1.1 but --api-version says v1.2');
    expect(() => api('/task/3', { 'dry-run': true })).toThrow('/task/3 (get task) has no dry-run mode');
    expect(() => api('/user', { wait: true })).toThrow('--wait follows the progress_id of an update; /user (get users) answers none');
    expect(() => api('/sheet/0/preset', { wait: true })).toThrow('use wds-files legacy sheet ID --async');
    expect(() => api('/user?dryrun=1')).toThrow('the legacy paths take no query; for dryrun=1 add --dry-run');
    expect(() => api('/user/add', { data: '[1,2]' })).toThrow('--data must be a JSON object');
    expect(api('user')).toMatchObject({ path: '/user', version: 'v1.2', body: {}, op: { number: 2 } });
    expect(api('/api/v1.0/sheet/0', { 'dry-run': true })).toMatchObject({ path: '/sheet/0', version: 'v1.0', op: { number: 8 } });
    expect(api('/sheet/2/task/abc-1', { 'api-version': 'v1.1' })).toMatchObject({ op: { number: 13 } });
    expect(api('/sheet/0/data/delete', { data: '{"data":[{"member_code":"A0001"}]}', wait: true })).toMatchObject({ op: { number: 16 }, body: { data: [{ member_code: 'A0001' }] } });
  });
});
