/**
 * The import journal for attachments (DESIGN.md section 8): the real CLI against the emulator,
 * whose fault cuts the answer to the register request after it was carried out. The files the
 * service holds are reported ok, confirmed by the listing, and the rerun with the same journal
 * sends no attachment request: each file is skipped, saying its bytes were applied by a run
 * before. A file whose bytes changed since is sent again. A run stopped by SIGINT while its first
 * request is in flight lets that request and its task end, sends nothing more, and the rerun
 * sends only the files of the other request.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { connectionArgs, finished, runCli, spawnCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { resetStats, sha256, writeFiles } from './photo-helpers.js';
import { CONTRACT, QUALIFICATIONS, attachmentFacts, attachmentRequests, pdf } from './attachment-helpers.js';
import { generatedCodes, journalLines, pause, runPlace } from './journal-helpers.js';

const MEMBERS = 12;
const emu = useEmulator({
  generate: { members: MEMBERS, photo_ratio: 0, attachments_per_member: [0, 0] },
  limits: { updatesPerMinute: 10_000 },
});
const where = ['--sheet', String(QUALIFICATIONS.sheet), '--field', String(QUALIFICATIONS.field)];

interface Report {
  counts: Record<string, number>;
  items: { code: string; file_name: string; outcome: string; reason: string }[];
}

beforeEach(async () => {
  await emu().control('POST', '/reset');
  await emu().control('DELETE', '/faults');
  await resetStats(emu());
});

describe('attachments import with the journal', () => {
  it('a lost answer to the register request: the files are ok by the listing, exit 0; the rerun sends nothing, then only a changed file', { timeout: 120_000 }, async () => {
    const files: Record<string, Buffer> = {};
    for (const [i, code] of generatedCodes(MEMBERS).entries()) {
      files[`${code}/licence.pdf`] = pdf(3_000 + i);
      files[`${code}/course.pdf`] = pdf(4_000 + i);
    }
    const dir = await writeFiles(tempDir('wds-journal-files-'), files);
    const place = runPlace();
    const report = join(tempDir(), 'report.json');
    await emu().control('POST', '/faults', { api: { reset_rate: 1, path_contains: '/file', method: 'POST', max_faults: 1 } });

    const run = await runCli(['attachments', 'import', dir, ...where, '--report', report, ...connectionArgs(emu())], place.env);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const written = JSON.parse(await readFile(report, 'utf8')) as Report;
    expect(written.counts).toMatchObject({ ok: 2 * MEMBERS, failed: 0, unknown: 0 });
    for (const item of written.items) expect(item.reason).toMatch(/^added, confirmed by the listing after the answer to the request was lost/);
    expect(await attachmentRequests(emu())).toMatchObject({ register: 1, update: 0 });
    const held = await attachmentFacts(emu());
    expect(held).toHaveLength(2 * MEMBERS);
    for (const f of held) expect(f.sha256, `${f.code}/${f.file_name}`).toBe(sha256(files[`${f.code}/${f.file_name}`]!));

    // A dry run says what the rerun will do, sending nothing and leaving the journal as it was.
    await resetStats(emu());
    const journalBefore = journalLines(place.stateHome);
    const dryReport = join(tempDir(), 'dry.json');
    const dry = await runCli(['attachments', 'import', dir, ...where, '--dry-run', '--report', dryReport, ...connectionArgs(emu())], place.env);
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect((JSON.parse(await readFile(dryReport, 'utf8')) as Report).counts).toMatchObject({ ok: 0, skipped: 2 * MEMBERS });
    expect(await attachmentRequests(emu())).toMatchObject({ register: 0, update: 0 });
    expect(journalLines(place.stateHome)).toEqual(journalBefore);

    await resetStats(emu());
    const rerunReport = join(tempDir(), 'rerun.json');
    const rerun = await runCli(['attachments', 'import', dir, ...where, '--report', rerunReport, ...connectionArgs(emu())], place.env);
    expect(rerun.code, rerun.stdout + rerun.stderr).toBe(0);
    expect(await attachmentRequests(emu())).toMatchObject({ register: 0, update: 0 });
    const again = JSON.parse(await readFile(rerunReport, 'utf8')) as Report;
    expect(again.counts).toMatchObject({ ok: 0, skipped: 2 * MEMBERS });
    expect(again.items[0]!.reason).toMatch(/^these bytes were applied as "(licence|course)\.pdf" of member G\d+ in sheet 2 field 1306 by an earlier run \(.+\) and the service still holds that file; not sent again$/);

    // New bytes under one name: only that file goes, replacing the one of the same name.
    const changed = pdf(5_555);
    await writeFile(join(dir, 'G000003/course.pdf'), changed);
    await resetStats(emu());
    const third = join(tempDir(), 'third.json');
    const once = await runCli(['attachments', 'import', dir, ...where, '--report', third, ...connectionArgs(emu())], place.env);
    expect(once.code, once.stdout + once.stderr).toBe(0);
    expect(await attachmentRequests(emu())).toMatchObject({ register: 0, update: 1 });
    const last = JSON.parse(await readFile(third, 'utf8')) as Report;
    expect(last.counts).toMatchObject({ ok: 1, skipped: 2 * MEMBERS - 1 });
    expect(last.items.find((i) => i.outcome === 'ok')).toMatchObject({ code: 'G000003', file_name: 'course.pdf' });
    const course = (await attachmentFacts(emu())).filter((f) => f.code === 'G000003' && f.file_name === 'course.pdf');
    expect(course.map((f) => f.sha256)).toEqual([sha256(changed)]);
  });

  it('SIGINT while the first request is in flight: it ends and is reported, nothing more is sent, exit 130; the rerun sends only the rest', { timeout: 120_000 }, async () => {
    // An export layout with two file parts: one register request each.
    const files: Record<string, Buffer> = {};
    for (const [i, code] of generatedCodes(MEMBERS).entries()) {
      files[`attachments/${CONTRACT.sheet}/${CONTRACT.field}/${code}/contract.pdf`] = pdf(3_000 + i);
      files[`attachments/${QUALIFICATIONS.sheet}/${QUALIFICATIONS.field}/${code}/licence.pdf`] = pdf(4_000 + i);
    }
    const dir = await writeFiles(tempDir('wds-journal-export-'), files);
    const place = runPlace();
    const report = join(tempDir(), 'report.json');
    // The service counts a request just before it answers; each poll of its task then takes 1.5 s,
    // so the signal lands while the first request's outcome is still awaited, however slow the
    // machine (a delay on the request itself left only the moment between its answer and the
    // second request to hit).
    await emu().control('POST', '/faults', { api: { latency_ms: 1500, path_contains: '/tasks/', method: 'GET' } });
    const child = spawnCli(['attachments', 'import', dir, '--report', report, ...connectionArgs(emu())], place.env);
    const done = finished(child);
    while ((await attachmentRequests(emu())).register < 1) await pause(10);
    child.kill('SIGINT');
    const run = await done;
    await emu().control('DELETE', '/faults');

    expect(run.code, run.stdout + run.stderr).toBe(130);
    expect(run.stdout).toContain(`interrupted: ${MEMBERS} of ${2 * MEMBERS} done; run it again to continue (stopped by SIGINT)`);
    expect(await attachmentRequests(emu())).toMatchObject({ register: 1 });
    const written = JSON.parse(await readFile(report, 'utf8')) as Report & { interrupted: unknown };
    expect(written.interrupted).toEqual({ signal: 'SIGINT', total: 2 * MEMBERS, unreached: MEMBERS });
    expect(written.counts).toMatchObject({ ok: MEMBERS, skipped: MEMBERS, failed: 0, unknown: 0 });
    const held = await attachmentFacts(emu());
    const ok = written.items.filter((i) => i.outcome === 'ok');
    expect(held.map((f) => `${f.code}/${f.file_name}`).sort()).toEqual(ok.map((i) => `${i.code}/${i.file_name}`).sort());
    // The files of the request not sent are named with their member, as not sent.
    const notSent = written.items.filter((i) => i.outcome === 'skipped');
    expect(notSent.map((i) => `${i.code}/${i.file_name}`).sort()).toEqual(Object.keys(files).map((p) => p.split('/').slice(-2).join('/')).filter((f) => !held.some((h) => `${h.code}/${h.file_name}` === f)).sort());
    for (const item of notSent) expect(item.reason).toBe('not sent: the run was stopped (SIGINT) before it reached this file; run it again to send it');

    const rerunReport = join(tempDir(), 'rerun.json');
    const rerun = await runCli(['attachments', 'import', dir, '--report', rerunReport, ...connectionArgs(emu())], place.env);
    expect(rerun.code, rerun.stdout + rerun.stderr).toBe(0);
    expect(await attachmentRequests(emu())).toMatchObject({ register: 2, update: 0 });
    expect((JSON.parse(await readFile(rerunReport, 'utf8')) as Report).counts).toMatchObject({ ok: MEMBERS, skipped: MEMBERS });
    const all = await attachmentFacts(emu());
    expect(all).toHaveLength(2 * MEMBERS);
    for (const f of all) expect(f.sha256, `${f.code}/${f.file_name}`).toBe(sha256(files[`attachments/${f.sheet_id}/${f.custom_field_id}/${f.code}/${f.file_name}`]!));
  });
});
