/**
 * A photo archive: photos replaced through the API (PATCH face images, without trimming, as
 * another user would) are the only ones the next run downloads; the others stay hard links to the
 * previous snapshot's, and the snapshot holds exactly the photos the service now has.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { jpeg } from '../helpers/fixtures.js';
import { state, tempDir } from '../helpers/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';
import { runExport } from '../../src/pipelines/export.js';
import { inodesOf, manifestOf, resetStats, storageDownloads } from './helpers.js';

const emu = useEmulator({ generate: { members: 120, photo_ratio: 1, attachments_per_member: [0, 0], photo_bytes: [8192, 20_000] } });
const api = useClient(emu);

const photoRun = async (archive: string) => (await runExport({ client: api(), what: 'photos', out: archive, archive: { pipeline: 'photos' } })).snapshot!;

describe('a photo archive', () => {
  it('downloads only the photos replaced through the API since the last snapshot', async () => {
    const archive = join(tempDir('wds-archive-'), 'photos');
    const first = await photoRun(archive);
    expect(first.counts.files).toBe(120);

    await emu().control('POST', '/clock', { advance_seconds: 60 });
    const codes = ['G000005', 'G000060'];
    const items = await Promise.all(codes.map(async (code, i) => ({ code, base64_face_image: (await jpeg(40, 40, 7 + i)).toString('base64') })));
    const task = await api().faceImages.update(items, { trimming: false });
    expect((await api().tasks.wait(task.taskId)).status).toBe('OK');

    await resetStats(emu());
    const second = await photoRun(archive);
    expect(await storageDownloads(emu())).toBe(codes.length);
    expect(second.counts).toMatchObject({ files: 120, changed: codes.length, unchanged: 120 - codes.length, new: 0, deleted: 0 });
    const truth = new Map((await state(emu())).members.map((m) => [m.code, m.photo!.sha256]));
    const lines = await manifestOf(second.path);
    expect(new Map([...lines.values()].map((l) => [l.code, l.sha256]))).toEqual(truth);
    const [a, b] = [await inodesOf(first.path), await inodesOf(second.path)];
    for (const [key, line] of lines) expect(b.get(key) === a.get(key), key).toBe(!codes.includes(line.code));
    expect((await verifyExport(first.path)).problems).toEqual([]);
    expect((await verifyExport(second.path)).problems).toEqual([]);
  });
});
