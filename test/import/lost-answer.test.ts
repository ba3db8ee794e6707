/**
 * A lost answer to an update request (DESIGN.md section 8, issue 14): the real CLI against the
 * emulator, whose fault cuts the answer after the request was carried out. The run reads the
 * listing and reports the photos the service holds `ok` (confirmed by the listing), exits 0, and
 * a rerun with the same journal sends no face image request for them. A task whose end cannot be
 * read is resolved the same way, and the message names the task.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { photoHashes, photoRequests, resetStats, sha256 } from './photo-helpers.js';
import { generatedCodes, journalLines, photoFolder, runPlace } from './journal-helpers.js';

const MEMBERS = 120;
const emu = useEmulator({
  generate: { members: MEMBERS, photo_ratio: 0, photo_bytes: [9_000, 10_000], attachments_per_member: [0, 0] },
  limits: { updatesPerMinute: 10_000 },
});

interface Report {
  counts: Record<string, number>;
  items: { code: string; outcome: string; reason: string; sha256?: string }[];
}

const readReport = async (path: string): Promise<Report> => JSON.parse(await readFile(path, 'utf8')) as Report;

beforeEach(async () => {
  await emu().control('POST', '/reset');
  await emu().control('DELETE', '/faults');
  await resetStats(emu());
});

describe('a lost answer to a photo register request', () => {
  it('the photos the service holds are ok (confirmed by the listing), exit 0; the rerun sends no face image request', { timeout: 120_000 }, async () => {
    const codes = generatedCodes(MEMBERS);
    const { dir, files } = await photoFolder(codes);
    const place = runPlace();
    const report = join(tempDir(), 'report.json');
    await emu().control('POST', '/faults', { api: { reset_rate: 1, path_contains: 'face_image', method: 'POST', max_faults: 1 } });

    const run = await runCli(['photos', 'import', dir, '--no-trim', '--report', report, ...connectionArgs(emu())], place.env);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const written = await readReport(report);
    expect(written.counts).toMatchObject({ ok: MEMBERS, failed: 0, unknown: 0 });
    // The first request (20 photos: the run starts with its smallest, then 100) lost its answer:
    // each of them is confirmed by the listing.
    const confirmed = written.items.filter((i) => i.reason.includes('confirmed by the listing'));
    expect(confirmed).toHaveLength(20);
    for (const item of confirmed) expect(item.reason).toMatch(/^registered, confirmed by the listing after the answer to the request was lost/);
    const held = await photoHashes(emu());
    for (const code of codes) expect(held.get(code), code).toBe(sha256(files.get(code)!));
    // One request each: the lost one was not sent again.
    expect(await photoRequests(emu())).toMatchObject({ register: 2, update: 0 });
    // The journal knows every photo as applied.
    const ends = journalLines(place.stateHome).filter((l) => l.t === 'end') as unknown as { applied: boolean[] }[];
    expect(ends.flatMap((e) => e.applied)).toEqual(codes.map(() => true));

    await resetStats(emu());
    const rerunReport = join(tempDir(), 'rerun.json');
    const rerun = await runCli(['photos', 'import', dir, '--no-trim', '--report', rerunReport, ...connectionArgs(emu())], place.env);
    expect(rerun.code, rerun.stdout + rerun.stderr).toBe(0);
    expect(await photoRequests(emu())).toMatchObject({ register: 0, update: 0 });
    const again = await readReport(rerunReport);
    expect(again.counts).toMatchObject({ ok: 0, skipped: MEMBERS });
    for (const item of again.items) expect(item.reason).toMatch(/^these bytes were applied to member G\d+ by an earlier run \(.+\) and the service still holds that photo; not sent again$/);
  });

  it('a changed photo is sent again by the rerun; an unchanged one is skipped', { timeout: 120_000 }, async () => {
    const codes = generatedCodes(3);
    const { dir, files } = await photoFolder(codes, 2);
    const place = runPlace();
    const first = await runCli(['photos', 'import', dir, '--no-trim', ...connectionArgs(emu())], place.env);
    expect(first.code, first.stdout + first.stderr).toBe(0);

    // New bytes for one member, and someone else replaced another's photo since.
    const { files: changed } = await photoFolder(['G000001'], 3);
    const { writeFile } = await import('node:fs/promises');
    await writeFile(join(dir, 'G000001.jpg'), changed.get('G000001')!);
    const other = (await photoFolder(['G000002'], 4)).files.get('G000002')!;
    await emu().control('POST', '/clock', { advance_seconds: 5 });
    const patched = await emu().api('PATCH', '/members/face_image', { enable_trimming: false, member_data: [{ code: 'G000002', base64_face_image: other.toString('base64') }] });
    expect((await emu().waitTask(patched.body.task_id)).status).toBe('OK');

    await resetStats(emu());
    const report = join(tempDir(), 'report.json');
    const rerun = await runCli(['photos', 'import', dir, '--no-trim', '--report', report, ...connectionArgs(emu())], place.env);
    expect(rerun.code, rerun.stdout + rerun.stderr).toBe(0);
    const outcomes = Object.fromEntries((await readReport(report)).items.map((i) => [i.code, i.outcome]));
    expect(outcomes).toEqual({ G000001: 'ok', G000002: 'ok', G000003: 'skipped' });
    expect(await photoRequests(emu())).toMatchObject({ register: 0, update: 1 });
    const held = await photoHashes(emu());
    expect(held.get('G000001')).toBe(sha256(changed.get('G000001')!));
    expect(held.get('G000002')).toBe(sha256(files.get('G000002')!));
  });

  it('a dry run writes nothing to the journal and counts as nothing applied; the journal holds neither the key nor the secret', { timeout: 120_000 }, async () => {
    const codes = generatedCodes(4);
    const { dir, files } = await photoFolder(codes, 6);
    const place = runPlace();
    const dry = await runCli(['photos', 'import', dir, '--no-trim', '--dry-run', ...connectionArgs(emu())], place.env);
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(journalLines(place.stateHome)).toEqual([]);

    const report = join(tempDir(), 'report.json');
    const run = await runCli(['photos', 'import', dir, '--no-trim', '--report', report, ...connectionArgs(emu())], place.env);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect((await readReport(report)).counts).toMatchObject({ ok: 4, skipped: 0 });
    const held = await photoHashes(emu());
    for (const code of codes) expect(held.get(code), code).toBe(sha256(files.get(code)!));
    const folder = join(place.stateHome, 'wds-files');
    // Beside the journal, only the kept access token's folder.
    const names = (await readdir(folder)).filter((name) => name !== 'tokens');
    expect(names).toEqual([expect.stringMatching(/^journal-[0-9a-f]{16}\.jsonl$/)]);
    const text = await readFile(join(folder, names[0]!), 'utf8');
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(KEY);
    expect(journalLines(place.stateHome).map((l) => l.t)).toEqual(['send', 'task', 'end', 'seen', 'seen', 'seen', 'seen']);
  });

  it('a request answered 500 that did nothing: unknown after the listing was awaited (exit 3, said in the summary); the rerun finds it not applied and sends it', { timeout: 180_000 }, async () => {
    const codes = generatedCodes(3);
    const { dir, files } = await photoFolder(codes, 8);
    const place = runPlace();
    const report = join(tempDir(), 'report.json');
    // The emulator answers 500 before it handles the request: nothing is done.
    await emu().control('POST', '/faults', { api: { error_rate: 1, error_statuses: [500], path_contains: 'face_image', method: 'POST', max_faults: 1 } });
    const run = await runCli(['photos', 'import', dir, '--no-trim', '--report', report, ...connectionArgs(emu())], place.env);
    expect(run.code, run.stdout + run.stderr).toBe(3);
    expect(run.stdout).toContain('photos import: 0 ok, 3 unknown');
    expect(run.stdout).toContain('unknown: ');
    const written = await readReport(report);
    expect(written.counts).toMatchObject({ ok: 0, failed: 0, unknown: 3 });
    for (const item of written.items) {
      expect(item.reason).toBe('the service answered 500, which does not tell whether it carried out the request, and the listing does not show the file yet; ' +
        'the service may still be working on it: run the import again later, and it checks before it sends anything again');
    }
    expect([...(await photoHashes(emu())).values()].filter(Boolean)).toEqual([]);

    await resetStats(emu());
    const rerunReport = join(tempDir(), 'rerun.json');
    const rerun = await runCli(['photos', 'import', dir, '--no-trim', '--report', rerunReport, ...connectionArgs(emu())], place.env);
    expect(rerun.code, rerun.stdout + rerun.stderr).toBe(0);
    expect((await readReport(rerunReport)).counts).toMatchObject({ ok: 3, skipped: 0 });
    expect(await photoRequests(emu())).toMatchObject({ register: 1 });
    const held = await photoHashes(emu());
    for (const code of codes) expect(held.get(code), code).toBe(sha256(files.get(code)!));
  });

  it('a dry run whose answer is lost: unknown, saying nothing was changed; the service holds nothing new', { timeout: 120_000 }, async () => {
    const codes = generatedCodes(2);
    const { dir } = await photoFolder(codes, 9);
    const place = runPlace();
    const report = join(tempDir(), 'report.json');
    await emu().control('POST', '/faults', { api: { reset_rate: 1, path_contains: 'face_image', method: 'POST', max_faults: 1 } });
    const run = await runCli(['photos', 'import', dir, '--no-trim', '--dry-run', '--report', report, ...connectionArgs(emu())], place.env);
    expect(run.code, run.stdout + run.stderr).toBe(3);
    const written = await readReport(report);
    expect(written.counts).toMatchObject({ ok: 0, unknown: 2 });
    for (const item of written.items) expect(item.reason).toMatch(/^dry run: the answer to the request was lost \(.+\), so whether the service would accept this file is unknown; nothing was changed$/);
    expect([...(await photoHashes(emu())).values()].filter(Boolean)).toEqual([]);
    expect(journalLines(place.stateHome)).toEqual([]);
  });

  it('a task whose end cannot be read: the listing tells, and the message names the task', { timeout: 120_000 }, async () => {
    const codes = generatedCodes(5);
    const { dir } = await photoFolder(codes, 5);
    const place = runPlace();
    const report = join(tempDir(), 'report.json');
    await emu().control('POST', '/faults', { api: { reset_rate: 1, path_contains: '/tasks/', method: 'GET' } });
    const run = await runCli(['photos', 'import', dir, '--no-trim', '--report', report, ...connectionArgs(emu())], place.env);
    await emu().control('DELETE', '/faults');
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const written = await readReport(report);
    const taskId = journalLines(place.stateHome).find((l) => l.t === 'task')!.task_id as number;
    expect(written.counts).toMatchObject({ ok: 5 });
    for (const item of written.items) expect(item.reason).toContain(`confirmed by the listing after the end of task ${taskId} could not be read`);
  });
});
