/**
 * Every command that takes `--report` and `--json` says how it ended, however it ended, as a user
 * runs it (the built CLI as a child process, the emulator over HTTP): with a wrong consumer secret
 * the report file is written (`command`, `outcome`, `exit_code`, `started_at`, `finished_at`, the
 * error) and stdout holds one JSON line of the shape every command's line has (`command`,
 * `status`, `exit_code`, `started_at`, `finished_at`, `counts`), exit 1. The commands that never
 * connect (verify, archive) end the same way on their own earliest failure; a usage error found
 * once the command started (exit 2) prints its line too. No secret anywhere.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { runCli, type CliRun } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';

// CLI children on a shared machine: their start-up alone can take seconds.
const CHILD_TIMEOUT_MS = 90_000;
const WRONG = 'every-ending-wrong-secret-5d81c';
const emu = useEmulator({ seed: 'samples/company' });

/** A folder for one row, with what its command reads: a photo to import, attachments by member, pipeline files, a folder that is no export or archive. */
function workspace(): string {
  const dir = tempDir('wds-every-ending-');
  mkdirSync(join(dir, 'photos'));
  writeFileSync(join(dir, 'photos', 'A0001.jpg'), Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1, 0xff, 0xd9]));
  mkdirSync(join(dir, 'files', 'A0001'), { recursive: true });
  writeFileSync(join(dir, 'files', 'A0001', 'license.txt'), 'a licence\n');
  mkdirSync(join(dir, 'plain'));
  writeFileSync(join(dir, 'plain', 'notes.txt'), 'not an export\n');
  const connection = ['connection:', `  base_url: ${emu().url}`, `  consumer_key: ${KEY}`, '  consumer_secret: ${TEST_SECRET}'];
  writeFileSync(join(dir, 'export.yaml'), ['name: every-ending-export', 'from: { service: photos }', 'to: { folder: out/pipeline }', ...connection, ''].join('\n'));
  return dir;
}

interface Row {
  name: string;
  args: (dir: string) => string[];
  /** Takes the connection flags (with the wrong secret); the others fail on their own. */
  connects: boolean;
  exit: number;
  /** The error's stable code. */
  code: string;
  /** The per-file commands list `items` in the report, and count by outcome. */
  files?: boolean;
}

const ROWS: Row[] = [
  { name: 'photos export', args: (d) => ['photos', 'export', '--out', join(d, 'out', 'photos')], connects: true, exit: 1, code: 'AUTHENTICATION', files: true },
  { name: 'attachments export', args: (d) => ['attachments', 'export', '--out', join(d, 'out', 'attachments.zip')], connects: true, exit: 1, code: 'AUTHENTICATION', files: true },
  { name: 'photos import', args: (d) => ['photos', 'import', join(d, 'photos')], connects: true, exit: 1, code: 'AUTHENTICATION', files: true },
  { name: 'attachments import', args: (d) => ['attachments', 'import', join(d, 'files'), '--sheet', '2', '--field', '1306'], connects: true, exit: 1, code: 'AUTHENTICATION', files: true },
  { name: 'run', args: (d) => ['run', join(d, 'export.yaml')], connects: false, exit: 1, code: 'AUTHENTICATION', files: true },
  { name: 'plan', args: (d) => ['plan', join(d, 'export.yaml')], connects: false, exit: 1, code: 'AUTHENTICATION' },
  { name: 'api', args: () => ['api', 'GET', '/members'], connects: true, exit: 1, code: 'AUTHENTICATION' },
  { name: 'legacy api', args: () => ['legacy', 'api', '/department'], connects: true, exit: 1, code: 'AUTHENTICATION' },
  { name: 'legacy sheet', args: (d) => ['legacy', 'sheet', '0', '--out', join(d, 'out', 'members.csv')], connects: true, exit: 1, code: 'AUTHENTICATION' },
  // No connection: their own earliest failure, a folder that is no export (exit 1) or no archive (a usage error, exit 2).
  { name: 'verify', args: (d) => ['verify', join(d, 'plain')], connects: false, exit: 1, code: 'Error' },
  ...(['list', 'check'] as const).map((sub): Row => ({ name: `archive ${sub}`, args: (d) => ['archive', sub, join(d, 'plain')], connects: false, exit: 2, code: 'USAGE' })),
  { name: 'archive show', args: (d) => ['archive', 'show', join(d, 'plain'), 'latest'], connects: false, exit: 2, code: 'USAGE' },
  { name: 'archive diff', args: (d) => ['archive', 'diff', join(d, 'plain'), 'latest~1', 'latest'], connects: false, exit: 2, code: 'USAGE' },
  { name: 'archive forget', args: (d) => ['archive', 'forget', join(d, 'plain'), '--keep-last', '1'], connects: false, exit: 2, code: 'USAGE' },
  { name: 'archive repair', args: (d) => ['archive', 'repair', join(d, 'plain')], connects: true, exit: 2, code: 'USAGE' },
  { name: 'archive restore', args: (d) => ['archive', 'restore', join(d, 'plain'), 'latest', '--out', join(d, 'out', 'restored')], connects: false, exit: 2, code: 'USAGE', files: true },
];

const readJson = (path: string): Record<string, unknown> => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;

/** The one line stdout holds, parsed. */
function jsonLine(run: CliRun): Record<string, unknown> {
  const lines = run.stdout.split('\n').filter((line) => line.trim());
  expect(lines, run.stdout + run.stderr).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('every ending writes the report and prints one JSON line', () => {
  it.each(ROWS)('$name: a report file and one JSON line, exit $exit', { timeout: CHILD_TIMEOUT_MS }, async (row) => {
    const dir = workspace();
    const report = join(dir, 'reports', 'report.json');
    const connection = row.connects ? ['--base-url', emu().url, '--consumer-key', KEY, '--consumer-secret', WRONG] : [];
    const run = await runCli([...row.args(dir), ...connection, '--report', report, '--json', '-q'], { TEST_SECRET: WRONG });
    expect(run.code, run.stderr).toBe(row.exit);

    const line = jsonLine(run);
    expect(line).toMatchObject({ command: row.name, status: 'failed', exit_code: row.exit, started_at: expect.stringMatching(ISO), finished_at: expect.stringMatching(ISO), counts: expect.any(Object), error_code: row.code });
    expect(Object.keys(line).slice(0, 6)).toEqual(['command', 'status', 'exit_code', 'started_at', 'finished_at', 'duration_ms']);
    if (row.files) expect(line.counts).toMatchObject({ ok: 0, failed: 0 });

    expect(existsSync(report), run.stderr).toBe(true);
    const written = readJson(report);
    expect(written).toMatchObject({ command: row.name, outcome: 'failed', exit_code: row.exit, started_at: line.started_at, finished_at: line.finished_at, error: { code: row.code, message: expect.any(String) } });
    if (row.files) expect(written.items).toEqual([]);
    // The message for a person is on stderr, once: stdout holds the line alone.
    expect(run.stderr).toContain(`wds-files: ${(written.error as { message: string }).message}`);
    for (const text of [run.stdout, run.stderr, readFileSync(report, 'utf8')]) expect(text).not.toContain(WRONG);
  });

  it('the same line on success: photos export, status ok, exit 0, its counts; the report outcome ok', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const dir = workspace();
    const report = join(dir, 'report.json');
    const run = await runCli(['photos', 'export', '--out', join(dir, 'out', 'photos'), '--base-url', emu().url, '--consumer-key', KEY, '--consumer-secret', SECRET, '--report', report, '--json', '-q']);
    expect(run.code, run.stderr).toBe(0);
    const line = jsonLine(run);
    expect(line).toMatchObject({ command: 'photos export', status: 'ok', exit_code: 0, counts: { ok: expect.any(Number), failed: 0 } });
    expect((line.counts as { ok: number }).ok).toBeGreaterThan(0);
    expect(line).not.toHaveProperty('error');
    const written = readJson(report);
    expect(written).toMatchObject({ command: 'photos export', outcome: 'ok', exit_code: 0, counts: line.counts });
    expect((written.items as unknown[]).length).toBe((line.counts as { ok: number }).ok);
  });

  it('a usage error found once the command started prints its line (exit 2); its report too once its place was checked', { timeout: CHILD_TIMEOUT_MS }, async () => {
    const dir = workspace();
    const report = join(dir, 'report.json');
    // The export's --out is a file: found by the command, after the report's place was checked.
    writeFileSync(join(dir, 'out-file'), 'mine\n');
    const run = await runCli(['photos', 'export', '--out', join(dir, 'out-file'), '--base-url', emu().url, '--consumer-key', KEY, '--consumer-secret', SECRET, '--report', report, '--json']);
    expect(run.code, run.stderr).toBe(2);
    expect(jsonLine(run)).toMatchObject({ command: 'photos export', status: 'failed', exit_code: 2, error_code: 'USAGE' });
    expect(readJson(report)).toMatchObject({ outcome: 'failed', exit_code: 2, error: { code: 'USAGE' } });
    expect(readFileSync(join(dir, 'out-file'), 'utf8')).toBe('mine\n');

    // A report that is itself the mistake is not written; the line still says it.
    const clash = await runCli(['verify', join(dir, 'plain'), '--report', join(dir, 'plain', 'report.json'), '--json']);
    expect(clash.code, clash.stderr).toBe(2);
    expect(jsonLine(clash)).toMatchObject({ command: 'verify', status: 'failed', exit_code: 2, error_code: 'USAGE' });
    expect(existsSync(join(dir, 'plain', 'report.json'))).toBe(false);
  });
});
