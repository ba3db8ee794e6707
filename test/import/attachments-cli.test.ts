/**
 * `wds-files attachments import` run as a child process against the in-process emulator
 * (DESIGN.md section 3): exit code 3 when a file did not go in, one JSON summary on stdout with
 * `--json`, a `--report` file listing every file with its outcome and reason, the text summary
 * without `--json`, `--dry-run` changing nothing, exit 0 when every file went in, and exit 2 for
 * `--sheet` without `--field`.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { connectionArgs, runCli, type CliRun } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { sha256, writeFiles } from './photo-helpers.js';
import { QUALIFICATIONS, exe, pdf, recordsOf } from './attachment-helpers.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });
const where = ['--sheet', String(QUALIFICATIONS.sheet), '--field', String(QUALIFICATIONS.field)];

const attachments = (...args: string[]): Promise<CliRun> => runCli(['attachments', 'import', ...args, ...connectionArgs(emu())]);

let dir: string;
let files: Record<string, Buffer>;

beforeAll(async () => {
  files = {
    'A0001/award.pdf': pdf(3000),
    'A0001/renamed.pdf': exe(),
    'A0010/aws-certification.pdf': pdf(3100),
    'Q0001/x.pdf': pdf(3200),
  };
  dir = await writeFiles(tempDir('wds-attachments-'), files);
});

describe('attachments import on the command line', () => {
  it('--json --report: exit 3 with an invalid file, one JSON summary, every file in the report', async () => {
    const report = join(tempDir('wds-report-'), 'report.json');
    const run = await attachments(dir, ...where, '--json', '--report', report);
    expect(run.code, run.stderr).toBe(3);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const summary = JSON.parse(lines[0]!);
    expect(summary).toMatchObject({
      command: 'attachments import',
      counts: { ok: 2, converted: 0, skipped: 0, invalid: 2, conflict: 0, failed: 0 },
      requests: { register: 1, update: 1, minimum: 2, resubmitted: 0 },
    });
    expect(summary.check_ms).toEqual(expect.any(Number));
    expect(summary.waited_ms).toEqual(expect.any(Number));

    const written = JSON.parse(await readFile(report, 'utf8')) as { items: { path: string; outcome: string; reason: string; code: string }[] };
    expect(Object.fromEntries(written.items.map((i) => [i.path.slice(dir.length + 1), i.outcome]))).toEqual({
      'A0001/award.pdf': 'ok', 'A0001/renamed.pdf': 'invalid', 'A0010/aws-certification.pdf': 'ok', 'Q0001/x.pdf': 'invalid',
    });
    for (const item of written.items) expect(item.reason, item.path).toEqual(expect.any(String));
    const reason = (suffix: string): string => written.items.find((i) => i.path.endsWith(suffix))!.reason;
    expect(reason('A0001/renamed.pdf')).toBe('the name says .pdf but the bytes are application/x-msdownload (.exe)');
    expect(reason('Q0001/x.pdf')).toBe('no member has the code Q0001');
    expect(reason('A0010/aws-certification.pdf')).toBe('replaced the file of the same name');

    const a0010 = await recordsOf(emu(), QUALIFICATIONS, 'A0010');
    expect(a0010.map((r) => [r.file_name, r.sha256])).toEqual([['aws-certification.pdf', sha256(files['A0010/aws-certification.pdf']!)]]);
  }, 60_000);

  it('without --json: the summary and each problem on stdout; --dry-run changes nothing', async () => {
    const before = await emu().control('GET', '/state');
    const run = await attachments(dir, ...where, '--dry-run');
    expect(run.code, run.stderr).toBe(3);
    expect(run.stdout).toContain('attachments import (dry run): 2 ok, 2 invalid');
    // award.pdf went in with the first run: now both held names go to update, in one request.
    expect(run.stdout).toContain('1 update request (0 register, 1 update; the fewest possible: 1)');
    expect(run.stdout).toMatch(/invalid: .*A0001\/renamed\.pdf \(A0001\): the name says \.pdf but the bytes are/);
    expect(run.stdout).toMatch(/invalid: .*Q0001\/x\.pdf \(Q0001\): no member has the code Q0001/);
    expect(await emu().control('GET', '/state')).toEqual(before);
  }, 60_000);

  it('every file in: exit 0; --sheet without --field: exit 2', async () => {
    const good = await writeFiles(tempDir('wds-attachments-'), { 'A0012/license.pdf': pdf(2000) });
    const run = await attachments(good, ...where, '--json');
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).counts.ok).toBe(1);
    const usage = await attachments(good, '--sheet', '2');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--sheet and --field go together');
  }, 60_000);
});
