/**
 * `--report FILE` of the commands that run no files through the stages (DESIGN.md section 3), as
 * a user runs them, the built CLI against the emulator: verify lists each file and its problem,
 * archive forget --dry-run each snapshot and the rule that keeps it, validate each file's
 * problems with their place, legacy api the request and its outcome without a secret, legacy
 * sheet the file written, plan the plan --json prints. A report
 * that cannot be written is refused (exit 2) before any request, and one of a command that fails
 * part way is written all the same.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { KEY, SECRET, useEmulator, type TestEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { connectionArgs, runCli, type CliRun } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { runExport } from '../../src/pipelines/export.js';
import { archiveRun } from '../archive/helpers.js';

// CLI children on a shared machine: their start-up alone can take seconds.
const CHILD_TIMEOUT_MS = 90_000;
const emu = useEmulator({ generate: { members: 6, photo_ratio: 1, photo_bytes: [8_192, 10_000], attachments_per_member: [1, 1], attachment_bytes: [2_048, 4_000] } });
const api = useClient(emu);

const readJson = (path: string): Record<string, unknown> => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;

/** The emulator's request counts by route, the legacy ones included. */
const requestCounts = async (e: TestEmulator): Promise<Record<string, number>> => ((await e.control('GET', '/stats')) as { requests: Record<string, number> }).requests;

it('verify --report: each manifest line with its outcome, the damaged file with its problem; exit 3', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-verify-report-');
  const out = join(dir, 'photos');
  await runExport({ client: api(), what: 'photos', out });
  const manifest = (await readFile(join(out, 'manifest.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { kind: string; path: string }).filter((l) => l.kind !== 'source');
  const damaged = manifest[1]!.path;
  await appendFile(join(out, damaged), 'x');

  const report = join(dir, 'reports', 'verify.json');
  const run = await runCli(['verify', out, '--report', report]);
  expect(run.code, run.stderr).toBe(3);
  const written = readJson(report);
  expect(written).toMatchObject({ command: 'verify', outcome: 'problems', target: out, files: manifest.length, ok: manifest.length - 1, problems: 1 });
  const items = written.items as { path: string; outcome: string; problem?: string; size?: number }[];
  expect(items.map((i) => i.path).sort()).toEqual(manifest.map((l) => l.path).sort());
  expect(items.find((i) => i.path === damaged)).toMatchObject({ outcome: 'problem', problem: expect.stringMatching(/^size \d+ bytes, the manifest says \d+$/) });
  expect(items.filter((i) => i.outcome === 'ok')).toHaveLength(manifest.length - 1);

  // A report inside the export would become a file the manifest does not list: refused, nothing written there.
  const inside = await runCli(['verify', out, '--report', join(out, 'verify.json')]);
  expect(inside.code, inside.stderr).toBe(2);
  expect(inside.stderr).toContain('is inside the export verified');
  expect(existsSync(join(out, 'verify.json'))).toBe(false);
});

it('a command that fails part way still writes its report: verify of a folder with no manifest, exit 1', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-verify-report-');
  const empty = join(dir, 'empty');
  mkdirSync(empty);
  const report = join(dir, 'verify.json');
  const run = await runCli(['verify', empty, '--report', report]);
  expect(run.code, run.stderr).toBe(1);
  expect(readJson(report)).toMatchObject({ command: 'verify', outcome: 'failed', error: { message: expect.stringContaining('no manifest.jsonl') } });
});

it('archive forget --dry-run --report: each snapshot kept with its rule, the others as would-remove; nothing removed', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const archive = join(tempDir('wds-forget-report-'), 'archive');
  const ids: string[] = [];
  for (let i = 0; i < 3; i += 1) {
    // A snapshot's id is the second it was taken: one run a second keeps them in order.
    if (i > 0) await sleep(1_100);
    ids.push((await archiveRun(api(), archive)).snapshot!.id);
  }
  const report = join(archive, '..', 'forget.json');

  const run = await runCli(['archive', 'forget', archive, '--keep-last', '2', '--dry-run', '--report', report]);
  expect(run.code, run.stderr).toBe(0);
  const written = readJson(report);
  expect(written).toMatchObject({ command: 'archive forget', outcome: 'ok', dry_run: true, policy: { keep_last: 2 } });
  expect(written.snapshots).toEqual([
    { id: ids[2], action: 'keep', reasons: ['last'] },
    { id: ids[1], action: 'keep', reasons: ['last'] },
    { id: ids[0], action: 'would remove', reasons: [expect.any(String)] },
  ]);
  expect(readdirSync(join(archive, 'snapshots')).sort()).toEqual([...ids].sort());

  // Inside the archive the report is refused, before the archive is locked or read.
  const inside = await runCli(['archive', 'forget', archive, '--keep-last', '1', '--report', join(archive, 'forget.json')]);
  expect(inside.code, inside.stderr).toBe(2);
  expect(inside.stderr).toContain('is inside the archive');
  expect(readdirSync(join(archive, 'snapshots'))).toHaveLength(3);
});

it('validate --report: each file with its problems by line and column; exit 2', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-validate-report-');
  const good = join(dir, 'good.yaml');
  const bad = join(dir, 'bad.yaml');
  writeFileSync(good, 'name: good\nfrom: { service: photos }\nto: { zip: out/photos.zip }\n');
  writeFileSync(bad, 'name: bad\nfrom: { service: photos }\nto: { zip: out/photos.zip }\ncolour: blue\n');
  const report = join(dir, 'validate.json');

  const run = await runCli(['validate', good, bad, '--report', report]);
  expect(run.code, run.stderr).toBe(2);
  const written = readJson(report);
  expect(written).toMatchObject({ command: 'validate', outcome: 'problems', online: false });
  const files = written.files as { file: string; ok: boolean; problems: { file: string; line: number; column: number; message: string }[] }[];
  expect(files.map((f) => [f.file, f.ok])).toEqual([[good, true], [bad, false]]);
  expect(files[1]!.problems).toHaveLength(1);
  expect(files[1]!.problems[0]).toMatchObject({ file: bad, line: 4, column: 1, message: expect.stringContaining('colour') });

  // The report may not be one of the files it validates.
  const over = await runCli(['validate', good, '--report', good]);
  expect(over.code, over.stderr).toBe(2);
  expect(readFileSync(good, 'utf8')).toContain('name: good');
});

it('legacy api --report: the request made and how it ended, no secret in it', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-legacy-report-');
  const report = join(dir, 'legacy.json');
  const run = await runCli(['legacy', 'api', '/user', '--report', report, ...connectionArgs(emu())]);
  expect(run.code, run.stderr).toBe(0);
  const text = readFileSync(report, 'utf8');
  expect(text).not.toContain(SECRET);
  // The answer (users with their passwords) is printed, not reported.
  expect(text).not.toMatch(/password|access_token/i);
  const written = JSON.parse(text) as Record<string, unknown>;
  expect(written).toMatchObject({
    command: 'legacy api', outcome: 'ok',
    request: { version: 'v1.2', path: '/user', operation: expect.stringMatching(/^2 /), dry_run: false, body_bytes: 0 },
  });
  expect((written.requests as { sent: number }).sent).toBeGreaterThanOrEqual(1);
});

it('legacy sheet --report: the file written, its records and bytes; plan --report: the plan --json prints', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-sheet-report-');
  const out = join(dir, 'members.csv');
  const report = join(dir, 'sheet.json');
  const run = await runCli(['legacy', 'sheet', '0', '--out', out, '--report', report, ...connectionArgs(emu())]);
  expect(run.code, run.stderr).toBe(0);
  const written = readJson(report);
  expect(written).toMatchObject({ command: 'legacy sheet', outcome: 'ok', sheet_id: 0, out, format: 'csv', written: true, records: 6, bytes: statSync(out).size, read: 'direct' });
  expect(readFileSync(report, 'utf8')).not.toContain(SECRET);

  const pipeline = join(dir, 'p.yaml');
  writeFileSync(pipeline, `name: p\nconnection: { base_url: "${emu().url}" }\nfrom: { service: photos }\nto: { zip: out/photos.zip }\n`);
  const env = { WDS_CONSUMER_KEY: KEY, WDS_CONSUMER_SECRET: SECRET };
  const plan = await runCli(['plan', pipeline, '--report', join(dir, 'plan.json')], env);
  expect(plan.code, plan.stderr).toBe(0);
  const json = await runCli(['plan', pipeline, '--json'], env);
  // The line --json prints is the plan under the heading every command's line has.
  const printed = JSON.parse(json.stdout) as Record<string, unknown>;
  expect(printed).toMatchObject({ command: 'plan', status: 'ok', exit_code: 0, counts: { transfer: 6 } });
  expect(readJson(join(dir, 'plan.json'))).toMatchObject({ command: 'plan', outcome: 'ok', exit_code: 0, file: pipeline, pipeline: 'p' });
  expect(printed).toMatchObject(readJson(join(dir, 'plan.json')).plan as Record<string, unknown>);
  expect((readJson(join(dir, 'plan.json')).plan as { files: { transfer: number } }).files.transfer).toBe(6);
});

it('a --report under a regular file: exit 2 before any request, for legacy api, legacy sheet, plan and archive list', { timeout: CHILD_TIMEOUT_MS }, async () => {
  const dir = tempDir('wds-report-refused-');
  const notAFolder = join(dir, 'file');
  writeFileSync(notAFolder, 'a file, not a folder');
  const report = join(notAFolder, 'report.json');
  const refused = (run: CliRun): void => {
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`--report ${report}: ${notAFolder} is a file, not a folder`);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  };
  const before = await requestCounts(emu());
  refused(await runCli(['legacy', 'api', '/user', '--report', report, ...connectionArgs(emu())]));
  refused(await runCli(['legacy', 'sheet', '0', '--out', join(dir, 'members.csv'), '--report', report, ...connectionArgs(emu())]));
  expect(await requestCounts(emu())).toEqual(before);
  expect(existsSync(join(dir, 'members.csv'))).toBe(false);

  const pipeline = join(dir, 'p.yaml');
  writeFileSync(pipeline, `name: p\nconnection: { base_url: "${emu().url}" }\nfrom: { service: photos }\nto: { zip: out/photos.zip }\n`);
  refused(await runCli(['plan', pipeline, '--report', report], { WDS_CONSUMER_KEY: 'k', WDS_CONSUMER_SECRET: 's' }));
  expect(await requestCounts(emu())).toEqual(before);
  refused(await runCli(['archive', 'list', join(dir, 'no-archive'), '--report', report]));
});
