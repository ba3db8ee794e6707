/**
 * `legacy sheet` as a user runs it: the real CLI against the emulator. Sheet 0 downloaded directly
 * and with --async holds the same rows, one per member of v2 GET /members, in a CSV that begins
 * with a BOM and has the labels first; JSONL holds one record per line. A direct read that times
 * out (a gateway's 504) is read asynchronously instead. Ctrl-C during the polls leaves the earlier
 * file as it was, and no partial file or lock; a second run meanwhile refuses, naming the first.
 */
import { readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { tempDir } from '../helpers/export.js';
import { connectionArgs, finished, runCli, spawnCli } from '../helpers/cli-process.js';
import { startBodyProxy, type BodyProxy } from '../helpers/body-proxy.js';
import { parseCsv } from '../../src/sources/csv.js';
import { SAMPLE_COMPANY_DIR } from '../../src/cli/paths.js';

// CLI children on a machine shared by four test files at once: their start-up alone can take seconds.
const CHILD_TIMEOUT_MS = 90_000;
const emu = useEmulator({ seed: SAMPLE_COMPANY_DIR, maintenance: false });

// Each run takes a token, and the legacy interface issues 5 in 60 minutes: an hour of service time passes between tests.
beforeEach(async () => {
  await emu().control('POST', '/clock', { advance_seconds: 3601 });
});

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

async function members(): Promise<{ code: string; name: string }[]> {
  // A fresh token: the clock moves by hours between tests, past the helper's cached one.
  const res = await fetch(`${emu().url}/api/v2.0/members`, { headers: { 'Service-Token': await emu().token() } });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { member_data: { code: string; name: string }[] };
  return (body.member_data as { code: string; name: string }[]).sort((x, y) => x.code.localeCompare(y.code));
}

/** The CSV's rows after the BOM: the labels, then one row per record. */
function csvRows(file: string): string[][] {
  const bytes = readFileSync(file);
  expect(bytes.subarray(0, 3)).toEqual(BOM);
  const rows = parseCsv(bytes.subarray(3).toString('utf8'));
  expect(rows.every((r) => !r.unclosed)).toBe(true);
  return rows.map((r) => r.fields);
}

it('sheet 0 as CSV, directly and with --async: the same rows, one per member, labels first, BOM first', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-legacy-sheet-');
  const direct = await runCli(['legacy', 'sheet', '0', '--out', join(dir, 'direct.csv'), ...connectionArgs(emu())]);
  expect(direct.code, direct.stderr).toBe(0);
  expect(direct.stdout).toMatch(/^sheet 0: \d+ records written to .*direct\.csv \(.*direct read/);
  const viaAsync = await runCli(['legacy', 'sheet', '0', '--out', join(dir, 'async.csv'), '--async', ...connectionArgs(emu())]);
  expect(viaAsync.code, viaAsync.stderr).toBe(0);
  expect(viaAsync.stdout).toContain('asynchronous read');
  // Each poll is said on stderr: the job is seen before it is ready, then ready.
  expect(viaAsync.stderr).toMatch(/sheet 0: (WAITING|RUNNING)/);
  expect(viaAsync.stderr).toMatch(/sheet 0: OK/);

  const rowsDirect = csvRows(join(dir, 'direct.csv'));
  expect(csvRows(join(dir, 'async.csv'))).toEqual(rowsDirect);
  const [labels, ...rows] = rowsDirect;
  // The labels the service gives, not the field names.
  expect(labels).not.toContain('member_code');
  expect(labels!.length).toBeGreaterThan(5);
  const everyone = await members();
  expect(rows.map((r) => r[0])).toEqual(everyone.map((m) => m.code));
  expect(rows.map((r) => r[1])).toEqual(everyone.map((m) => m.name));
  expect(rows.every((r) => r.length === labels!.length)).toBe(true);
  expect(readdirSync(dir).sort()).toEqual(['async.csv', 'direct.csv']);
});

it('JSONL: one record per line, one line per member, with --json a summary on stdout', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-legacy-sheet-');
  const out = join(dir, 'members.jsonl');
  const run = await runCli(['legacy', 'sheet', '0', '-o', out, '--json', ...connectionArgs(emu())]);
  expect(run.code, run.stderr).toBe(0);
  const everyone = await members();
  expect(JSON.parse(run.stdout)).toMatchObject({ sheet_id: 0, out, format: 'jsonl', records: everyone.length, read: 'direct' });
  const lines = readFileSync(out, 'utf8').split('\n');
  expect(lines.pop()).toBe('');
  const records = lines.map((l) => JSON.parse(l) as { member_code: string; member_name: string });
  expect(records.map((r) => r.member_code)).toEqual(everyone.map((m) => m.code));
  expect(records.map((r) => r.member_name)).toEqual(everyone.map((m) => m.name));
});

/**
 * A gateway in front of the emulator that times out on the large read, as a real one does: the
 * direct read of sheet 0 (not its header-only dry run) answers 504; everything else passes.
 */
async function timingOutGateway(target: string): Promise<BodyProxy & { timeouts: () => number }> {
  let timeouts = 0;
  const proxy = await startBodyProxy(target, (req, body, res) => {
    if (!/^\/api\/v1\.\d\/sheet\/0$/.test(req.url ?? '') || body.toString().includes('dryrun')) return false;
    timeouts += 1;
    res.writeHead(504, { 'Content-Type': 'text/html' }).end('<html>504 Gateway Time-out</html>');
    return true;
  });
  return { ...proxy, timeouts: () => timeouts };
}

it('a direct read that times out is read asynchronously instead, and says so', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const gateway = await timingOutGateway(emu().url);
  try {
    const dir = tempDir('wds-legacy-sheet-');
    const out = join(dir, 'sheet.csv');
    const run = await runCli(['legacy', 'sheet', '0', '--out', out, '--base-url', gateway.url, '--consumer-key', KEY, '--consumer-secret', SECRET]);
    expect(run.code, run.stderr).toBe(0);
    expect(gateway.timeouts()).toBeGreaterThan(0);
    expect(run.stderr).toContain('sheet 0: the direct read timed out');
    expect(run.stderr).toContain('reading it asynchronously instead');
    expect(run.stdout).toContain('asynchronous read');
    const [, ...rows] = csvRows(out);
    expect(rows.map((r) => r[0])).toEqual((await members()).map((m) => m.code));
  } finally {
    await gateway.close();
  }
});

it('Ctrl-C while polling leaves the earlier download, no partial file and no lock; a second run meanwhile refuses', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-legacy-sheet-');
  const out = join(dir, 'sheet.csv');
  const earlier = '\uFEFFCode,Name\r\nA0001,earlier download\r\n';
  writeFileSync(out, earlier);
  // The job then stays WAITING for as long as the test needs.
  await emu().control('POST', '/clock', { speed: 0.0001 });
  try {
    const first = spawnCli(['legacy', 'sheet', '0', '--out', out, '--async', ...connectionArgs(emu())]);
    const ended = finished(first);
    let stderr = '';
    await new Promise<void>((resolve, reject) => {
      first.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (/sheet 0: WAITING/.test(stderr)) resolve();
      });
      first.once('close', () => reject(new Error(`the first run ended before its first poll:\n${stderr}`)));
    });

    const second = await runCli(['legacy', 'sheet', '0', '--out', out, ...connectionArgs(emu())]);
    expect(second.code, second.stderr).toBe(1);
    expect(second.stderr).toContain(`${out} is being written by another run: pid ${first.pid}`);
    expect(second.stderr).toContain(`${out}.lock`);

    first.kill('SIGINT');
    const run = await ended;
    expect(run.code, run.stderr).toBe(130);
    expect(run.stderr).toContain('interrupted: stopped by SIGINT; nothing was written');
    expect(readFileSync(out, 'utf8')).toBe(earlier);
    expect(readdirSync(dir)).toEqual(['sheet.csv']);
  } finally {
    await emu().control('POST', '/clock', { speed: 1 });
  }

  // Run again, it replaces the earlier download whole.
  await emu().control('POST', '/clock', { advance_seconds: 3601 });
  const again = await runCli(['legacy', 'sheet', '0', '--out', out, ...connectionArgs(emu())]);
  expect(again.code, again.stderr).toBe(0);
  const [, ...rows] = csvRows(out);
  expect(rows.map((r) => r[0])).toEqual((await members()).map((m) => m.code));
  expect(readdirSync(dir)).toEqual(['sheet.csv']);
});

it('a run whose lock was taken over while it was stopped exits 1 and does not rename its download over the file', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-legacy-sheet-');
  const out = join(dir, 'sheet.csv');
  const earlier = '\uFEFFCode,Name\r\nA0001,earlier download\r\n';
  writeFileSync(out, earlier);
  // What a run on another host writes when it takes a stale lock over: a new lock file.
  const taker = `${JSON.stringify({ pid: 4242, host: 'backup-host-2', command: 'wds-files legacy sheet 0 --out sheet.csv', started_at: new Date().toISOString(), token: 'taker' })}\n`;
  await emu().control('POST', '/clock', { speed: 0.0001 });
  let run;
  try {
    const first = spawnCli(['legacy', 'sheet', '0', '--out', out, '--async', ...connectionArgs(emu())]);
    const ended = finished(first);
    let stderr = '';
    await new Promise<void>((resolve, reject) => {
      first.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (/sheet 0: WAITING/.test(stderr)) resolve();
      });
      first.once('close', () => reject(new Error(`the run ended before its first poll:\n${stderr}`)));
    });
    process.kill(first.pid!, 'SIGSTOP');
    try {
      writeFileSync(`${out}.lock.new`, taker);
      renameSync(`${out}.lock.new`, `${out}.lock`);
    } finally {
      process.kill(first.pid!, 'SIGCONT');
    }
    // The job is let finish: the run downloads the sheet, and must not put it in place.
    await emu().control('POST', '/clock', { speed: 1, advance_seconds: 60 });
    run = await ended;
  } finally {
    await emu().control('POST', '/clock', { speed: 1 });
  }
  expect(run.code, run.stderr).toBe(1);
  expect(run.stderr).toContain(`another run took over the lock ${out}.lock (pid 4242 on backup-host-2`);
  expect(run.stderr).not.toMatch(/\n\s+at /);
  expect(readFileSync(out, 'utf8')).toBe(earlier);
  expect(readFileSync(`${out}.lock`, 'utf8')).toBe(taker);
});

it('a request the budget would refuse waits, and the wait is said on stderr', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-legacy-sheet-');
  // The budget shrunk to one request in 2 s: the sheet's read waits for the labels' read to leave the window.
  const run = await runCli(['legacy', 'sheet', '0', '--out', join(dir, 'sheet.csv'), ...connectionArgs(emu())], { WDS_LEGACY_LIMITS: 'request=1/2s' });
  expect(run.code, run.stderr).toBe(0);
  expect(run.stderr).toMatch(/waiting \d+(\.\d+)? s: .*request/);
  const [, ...rows] = csvRows(join(dir, 'sheet.csv'));
  expect(rows).toHaveLength((await members()).length);

  const refused = await runCli(['legacy', 'sheet', '0', '--out', join(dir, 'other.csv'), ...connectionArgs(emu())], { WDS_LEGACY_LIMITS: 'update=5/1m' });
  expect(refused.code).toBe(2);
  expect(refused.stderr).toContain('WDS_LEGACY_LIMITS takes request= and token= only');
});
