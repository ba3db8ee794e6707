/**
 * Archive runs that do not end well (DESIGN.md sections 8 and 10): a run stopped by a signal
 * leaves `snapshots/<id>.partial/`, and the next run continues it and downloads only what is
 * missing, also after what a SIGKILL leaves (a manifest line cut short, temporary files, a file
 * whose bytes are not whole); a run whose downloads fail finishes its snapshot with complete:
 * false, latest unmoved, and the next run fetches only the missing files.
 */
import { appendFile, link, mkdir, readdir, readFile, truncate, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor, useClient } from '../helpers/client.js';
import { state, tempDir } from '../helpers/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { archiveRun, changeAttachments, deleteMember, fileId, inodesOf, manifestOf, resetStats, snapshotJson, storageDownloads } from './helpers.js';

const emu = useEmulator({ generate: { members: 80, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [3000, 20_000] } });
const api = useClient(emu);

/** A run stopped (as by Ctrl-C) once `after` files were downloaded. */
async function stoppedRun(archive: string, after: number) {
  const stop = new AbortController();
  const result = await archiveRun(api(), archive, {
    signal: stop.signal,
    concurrency: 2,
    onProgress: (p) => {
      if (p.done >= after && !stop.signal.aborted) stop.abort('SIGINT');
    },
  });
  expect(result.report.interrupted?.signal).toBe('SIGINT');
  expect(result.snapshot!.path.endsWith('.partial')).toBe(true);
  expect(result.snapshot!.complete).toBe(false);
  return result;
}

/**
 * Changes 6 attachments of one file part, and makes the listing of another come 400 ms late, with
 * `fault` besides: the changed files' part is listed, and its files start, while the other is not.
 */
async function changeOnePart(fault: Record<string, unknown>): Promise<string[]> {
  const changed = await changeAttachments(emu(), 6);
  const parts = new Set(changed.map((id) => id.split('/').slice(0, 2).join('/')));
  const layouts = await api().sheets.layouts();
  const other = layouts.flatMap((l) => l.custom_fields.filter((f) => f.type_detail === 'attach_file').map((f) => `${l.id}/${f.id}`)).find((part) => !parts.has(part));
  expect(other, 'a file part with no changed file').toBeDefined();
  await emu().control('POST', '/faults', { api: { path_contains: `/sheets/${other!.replace('/', '/custom_fields/')}/file`, latency_ms: 400, ...fault } });
  return changed;
}

describe('an interrupted archive run', { timeout: 120_000 }, () => {
  it('that could not list the files leaves the archive as it was: no new snapshot, none of the folders it began making', async () => {
    const archive = join(tempDir('wds-archive-'), 'a');
    const first = await archiveRun(api(), archive);
    const refused = clientFor(emu(), { consumerSecret: 'not-the-secret' });
    try {
      await expect(archiveRun(refused, archive)).rejects.toThrow();
    } finally {
      await refused.close();
    }
    expect(await readdir(join(archive, 'snapshots'))).toEqual([first.snapshot!.id]);
    // A stop while the service lists leaves nothing either.
    const stop = new AbortController();
    stop.abort('SIGINT');
    const stopped = await archiveRun(api(), archive, { signal: stop.signal });
    expect(stopped.report.interrupted?.signal).toBe('SIGINT');
    expect(await readdir(join(archive, 'snapshots'))).toEqual([first.snapshot!.id]);
    expect((await verifyExport(first.snapshot!.path)).problems).toEqual([]);
  });

  it('whose listing fails after a file part\'s changed files began downloading leaves the archive as it was, and the next run fetches them', async () => {
    const archive = join(tempDir('wds-archive-'), 'a');
    const first = (await archiveRun(api(), archive)).snapshot!;
    // The other part's listing comes late and fails; the changed files' part is listed at once.
    const changed = await changeOnePart({ error_rate: 1, error_statuses: [500] });
    await resetStats(emu());
    const failing = clientFor(emu(), { retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 50 } });
    try {
      await expect(archiveRun(failing, archive)).rejects.toThrow();
    } finally {
      await failing.close();
      await emu().control('DELETE', '/faults');
    }
    // The changed files were downloaded while the other part was listed; none of it is kept.
    expect(await storageDownloads(emu())).toBe(changed.length);
    expect(await readdir(join(archive, 'snapshots'))).toEqual([first.id]);
    expect((await readFile(join(archive, 'latest'), 'utf8')).trim()).toBe(first.id);
    expect((await verifyExport(first.path)).problems).toEqual([]);

    await resetStats(emu());
    const rerun = (await archiveRun(api(), archive)).snapshot!;
    expect(await storageDownloads(emu())).toBe(changed.length);
    expect(rerun.counts).toMatchObject({ files: first.counts.files, changed: changed.length, unchanged: first.counts.files - changed.length, failed: 0 });
    expect((await verifyExport(rerun.path)).problems).toEqual([]);
    const held = await manifestOf(rerun.path);
    expect([...held.values()].filter((l) => changed.includes(fileId(l))).length).toBe(changed.length);
  });

  it('stopped while the service lists, once a file part\'s changed files landed, keeps them in a .partial the next run continues', async () => {
    const archive = join(tempDir('wds-archive-'), 'a');
    const first = (await archiveRun(api(), archive)).snapshot!;
    const changed = await changeOnePart({});
    const stop = new AbortController();
    let stopped;
    try {
      stopped = await archiveRun(api(), archive, {
        signal: stop.signal,
        onProgress: (p) => {
          if (p.done >= changed.length && !stop.signal.aborted) stop.abort('SIGINT');
        },
      });
    } finally {
      await emu().control('DELETE', '/faults');
    }
    // Every changed file landed before the other part was listed.
    expect(stopped.report.interrupted?.signal).toBe('SIGINT');
    expect(stopped.report.counts.ok).toBe(changed.length);
    expect(stopped.snapshot!.path.endsWith('.partial')).toBe(true);
    expect([...(await manifestOf(stopped.snapshot!.path)).values()].map(fileId).sort()).toEqual([...changed].sort());
    expect((await readFile(join(archive, 'latest'), 'utf8')).trim()).toBe(first.id);

    await resetStats(emu());
    const rerun = await archiveRun(api(), archive);
    expect(await storageDownloads(emu())).toBe(0);
    expect(rerun.snapshot!.counts).toMatchObject({ files: first.counts.files, changed: changed.length, unchanged: first.counts.files - changed.length, failed: 0 });
    expect(rerun.report.notes.join('\n')).toContain(`continued the snapshot an interrupted run left (${stopped.snapshot!.id}.partial)`);
    expect((await verifyExport(rerun.snapshot!.path)).problems).toEqual([]);
    expect(await readdir(join(archive, 'snapshots'))).toEqual([first.id, rerun.snapshot!.id]);
  });

  it('leaves a .partial that the next run continues, downloading only what is missing', async () => {
    const archive = join(tempDir('wds-archive-'), 'a');
    const stopped = await stoppedRun(archive, 10);
    expect(await readdir(join(archive, 'snapshots'))).toEqual([`${stopped.snapshot!.id}.partial`]);
    await expect(readFile(join(archive, 'latest'))).rejects.toThrow();
    const present = (await manifestOf(stopped.snapshot!.path)).size;
    expect(present).toBeGreaterThanOrEqual(10);

    await resetStats(emu());
    const rerun = await archiveRun(api(), archive);
    const s = await state(emu());
    expect(await storageDownloads(emu())).toBe(s.attachments.length - present);
    expect(rerun.snapshot!.complete).toBe(true);
    expect(rerun.snapshot!.counts).toMatchObject({ files: s.attachments.length, new: s.attachments.length, failed: 0 });
    expect(rerun.report.notes.join('\n')).toContain(`continued the snapshot an interrupted run left (${stopped.snapshot!.id}.partial)`);
    expect(await readdir(join(archive, 'snapshots'))).toEqual([rerun.snapshot!.id]);
    const held = new Map([...(await manifestOf(rerun.snapshot!.path)).values()].map((l) => [fileId(l), l.sha256]));
    expect(held).toEqual(new Map(s.attachments.map((f) => [`${f.sheet_id}/${f.custom_field_id}/${f.code}/${f.file_name}`, f.sha256])));
    expect((await verifyExport(rerun.snapshot!.path)).problems).toEqual([]);
    expect((await readFile(join(archive, 'latest'), 'utf8')).trim()).toBe(rerun.snapshot!.id);
  });

  it('gives up the files of a member deleted since it was stopped: the snapshot holds what the service lists', async () => {
    const archive = join(tempDir('wds-archive-'), 'a');
    const stopped = await stoppedRun(archive, 10);
    const held = [...(await manifestOf(stopped.snapshot!.path)).values()];
    const victim = held[0]!.code;
    const theirs = held.filter((l) => l.code === victim);
    await deleteMember(emu(), victim);

    const rerun = await archiveRun(api(), archive);
    const s = await state(emu());
    expect(rerun.snapshot!.complete).toBe(true);
    expect(rerun.snapshot!.counts).toMatchObject({ files: s.attachments.length, failed: 0 });
    expect(rerun.report.notes.join('\n')).toContain(`${theirs.length} file${theirs.length === 1 ? '' : 's'} the interrupted run had placed in the snapshot, which the service lists no more`);
    const kept = new Map([...(await manifestOf(rerun.snapshot!.path)).values()].map((l) => [fileId(l), l.sha256]));
    expect(kept).toEqual(new Map(s.attachments.map((f) => [`${f.sheet_id}/${f.custom_field_id}/${f.code}/${f.file_name}`, f.sha256])));
    for (const line of theirs) expect(existsSync(join(rerun.snapshot!.path, line.path)), line.path).toBe(false);
    expect((await verifyExport(rerun.snapshot!.path)).problems).toEqual([]);
  });

  it('after what a SIGKILL leaves (a cut manifest line, temporary files, a file cut short), fetches only what is missing or damaged', async () => {
    const archive = join(tempDir('wds-archive-'), 'a');
    const first = (await archiveRun(api(), archive)).snapshot!;
    const changed = await changeAttachments(emu(), 8);
    const stopped = await stoppedRun(archive, 3);
    const partial = stopped.snapshot!.path;
    const lines = await manifestOf(partial);
    const changedInPartial = [...lines.values()].filter((l) => changed.includes(fileId(l)));
    expect(changedInPartial.length).toBeGreaterThanOrEqual(3);
    expect(changedInPartial.length).toBeLessThan(changed.length);
    // What a kill leaves: a line cut short, a temporary file, and a file whose bytes were cut.
    await appendFile(join(partial, 'manifest.jsonl'), '{"kind":"attachment","code":"G0000');
    await mkdir(join(partial, '.wds-tmp'), { recursive: true });
    await writeFile(join(partial, '.wds-tmp', '7-deadbeef'), 'half a download');
    const damaged = changedInPartial[0]!;
    await truncate(join(partial, damaged.path), 100);

    await resetStats(emu());
    const rerun = await archiveRun(api(), archive);
    expect(await storageDownloads(emu())).toBe(changed.length - changedInPartial.length + 1);
    const snap = rerun.snapshot!;
    expect(snap.complete).toBe(true);
    expect(snap.counts).toMatchObject({ files: first.counts.files, changed: changed.length, unchanged: first.counts.files - changed.length, new: 0, failed: 0 });
    expect((await verifyExport(snap.path)).problems).toEqual([]);
    expect((await verifyExport(first.path)).problems).toEqual([]);
    const [a, b] = [await inodesOf(first.path), await inodesOf(snap.path)];
    const after = await manifestOf(snap.path);
    for (const [key, ino] of b) expect(ino === a.get(key), key).toBe(!changed.includes(fileId(after.get(key)!)));
    expect(await readdir(join(archive, 'snapshots'))).toEqual([first.id, snap.id]);
  });
});

describe('an archive run whose downloads fail', { timeout: 120_000 }, () => {
  it('finishes its snapshot with complete: false and latest unmoved; the next run fetches only the missing files', async () => {
    const archive = join(tempDir('wds-archive-'), 'a');
    const first = (await archiveRun(api(), archive)).snapshot!;
    const changed = await changeAttachments(emu(), 4);
    await emu().control('POST', '/faults', { storage: { error_rate: 1 } });
    let failing;
    try {
      failing = await archiveRun(api(), archive, { retry: { maxAttempts: 1 } });
    } finally {
      await emu().control('DELETE', '/faults');
    }
    const broken = failing.snapshot!;
    expect(failing.report.counts.failed).toBe(changed.length);
    expect(broken.complete).toBe(false);
    expect(broken.path).toBe(join(archive, 'snapshots', broken.id));
    expect(await snapshotJson(broken.path)).toMatchObject({ complete: false, previous: first.id, counts: { failed: changed.length, files: first.counts.files - changed.length } });
    expect((await readFile(join(archive, 'latest'), 'utf8')).trim()).toBe(first.id);
    expect((await verifyExport(broken.path)).problems).toEqual([]);

    await resetStats(emu());
    const next = await archiveRun(api(), archive);
    expect(await storageDownloads(emu())).toBe(changed.length);
    expect(next.snapshot!.complete).toBe(true);
    expect(await snapshotJson(next.snapshot!.path)).toMatchObject({ previous: broken.id, counts: { changed: changed.length, failed: 0 } });
    expect((await readFile(join(archive, 'latest'), 'utf8')).trim()).toBe(next.snapshot!.id);
  });
});

describe('a member deleted while a .partial waits', { timeout: 120_000 }, () => {
  it('leaves none of its files or folders in the snapshot that continues it', async () => {
    const archive = join(tempDir('wds-archive-'), 'a');
    const first = await archiveRun(api(), archive);
    // What a run SIGKILLed while the service listed leaves: its .partial, holding the folders and
    // links it was placing ahead and no manifest line yet. Here the last member's.
    const partial = join(archive, 'snapshots', `${first.snapshot!.id}-2.partial`);
    const lines = [...(await manifestOf(first.snapshot!.path)).values()];
    const victim = lines.map((l) => l.code).sort().at(-1)!;
    const theirs = lines.filter((l) => l.code === victim);
    const folders = [...new Set(theirs.map((l) => dirname(l.path)))];
    for (const folder of folders) await mkdir(join(partial, folder), { recursive: true });
    for (const line of theirs) await link(join(first.snapshot!.path, line.path), join(partial, line.path));
    await deleteMember(emu(), victim);

    const rerun = await archiveRun(api(), archive);
    expect(rerun.snapshot!.complete).toBe(true);
    expect(rerun.report.notes.join('\n')).toContain('continued the snapshot an interrupted run left');
    expect([...(await manifestOf(rerun.snapshot!.path)).values()].filter((l) => l.code === victim)).toEqual([]);
    for (const folder of folders) expect(existsSync(join(rerun.snapshot!.path, folder)), folder).toBe(false);
    expect((await verifyExport(rerun.snapshot!.path)).problems).toEqual([]);
    // The earlier snapshot keeps the member's files.
    for (const line of theirs) expect(existsSync(join(first.snapshot!.path, line.path)), line.path).toBe(true);
  });
});
