import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useEmulator, API } from '../helpers/emulator.js';
import { addMember, addSheet, b64, companyOf, field, jpeg, setPhoto } from '../helpers/fixtures.js';
import { TIMESTAMP_PATTERN } from '../../src/spec/time.js';

const emu = useEmulator({ limits: { updatesPerMinute: 1000 } });
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

async function fetchBytes(url: string): Promise<Buffer> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

describe('clock (DESIGN.md section 6)', () => {
  it('reads the service time in local format, and jumps it', async () => {
    const clock = await emu().control('GET', '/clock');
    expect(clock.now).toMatch(TIMESTAMP_PATTERN);
    expect(clock.now.slice(0, 13)).toBe('2026-04-01 10');
    expect(clock.speed).toBe(1);
    const jumped = await emu().control('POST', '/clock', { advance_seconds: 3600 });
    expect(jumped.now.slice(0, 13)).toBe('2026-04-01 11');
    expect(jumped.epoch_ms - clock.epoch_ms).toBeGreaterThanOrEqual(3600_000);
    expect(jumped.epoch_ms - clock.epoch_ms).toBeLessThan(3660_000);
  });

  it('sets the time, and refuses a bad body with 400', async () => {
    expect((await emu().control('POST', '/clock', { now: '2026-04-01 12:00:00' })).now).toBe('2026-04-01 12:00:00');
    const bad = await fetch(`${emu().url}/_emulator/clock`, { method: 'POST', body: JSON.stringify({ advance_seconds: -5 }) });
    expect(bad.status).toBe(400);
    const badTime = await fetch(`${emu().url}/_emulator/clock`, { method: 'POST', body: JSON.stringify({ now: 'tomorrow' }) });
    expect(badTime.status).toBe(400);
  });

  it('runs a service minute per real second at speed 60', async () => {
    const before = await emu().control('POST', '/clock', { speed: 60 });
    expect(before.speed).toBe(60);
    await new Promise((r) => setTimeout(r, 1000));
    const after = await emu().control('GET', '/clock');
    await emu().control('POST', '/clock', { speed: 1 });
    const serviceSeconds = (after.epoch_ms - before.epoch_ms) / 1000;
    expect(serviceSeconds).toBeGreaterThan(45);
    expect(serviceSeconds).toBeLessThan(120);
  });
});

describe('state (DESIGN.md section 6)', () => {
  it('lists every member with its photo, and every attachment, with size and the sha256 of the bytes served', async () => {
    const photo = await jpeg(32, 32, 3);
    addMember(emu(), 'C001');
    addMember(emu(), 'C002');
    setPhoto(emu(), 'C001', photo);
    addSheet(emu(), { id: 7, name: 'Documents', record_type: 1, fields: [field(71, 'Note', 'text_box'), field(72, 'File', 'attach_file')] });
    const company = companyOf(emu());
    const pdf = Buffer.from('%PDF-1.4\n% a small document\n%%EOF\n');
    const csv = Buffer.from('a,b\n1,2\n');
    company.data.sheets['7']!.records.C002 = [
      { values: { '71': ['first'] }, files: { '72': company.storeFile(pdf, 'contract.pdf') } },
      { values: { '71': ['no file'] }, files: {} },
      { values: {}, files: { '72': company.storeFile(csv, 'list.csv') } },
    ];

    const state = await emu().control('GET', '/state');
    const c001 = state.members.find((m: { code: string }) => m.code === 'C001');
    expect(c001.photo).toEqual({ file_name: 'C001.jpg', size: photo.length, sha256: sha256(photo), updated_at: expect.stringMatching(TIMESTAMP_PATTERN) });
    expect(state.members.find((m: { code: string }) => m.code === 'C002').photo).toBeNull();
    expect(state.attachments).toEqual([
      { sheet_id: 7, custom_field_id: 72, code: 'C002', record_index: 0, file_name: 'contract.pdf', size: pdf.length, sha256: sha256(pdf), updated_at: expect.any(String) },
      { sheet_id: 7, custom_field_id: 72, code: 'C002', record_index: 1, file_name: 'list.csv', size: csv.length, sha256: sha256(csv), updated_at: expect.any(String) },
    ]);

    const photos = (await emu().api('GET', '/members/face_image')).body.member_data;
    const served = await fetchBytes(photos.find((m: { code: string }) => m.code === 'C001').download_url);
    expect(sha256(served)).toBe(c001.photo.sha256);
    const files = (await emu().api('GET', '/sheets/7/custom_fields/72/file')).body.member_data[0].records;
    for (const [i, record] of files.entries()) {
      expect(sha256(await fetchBytes(record.download_url))).toBe(state.attachments[i].sha256);
    }
  });
});

describe('stats (DESIGN.md section 6)', () => {
  it('counts requests by method and route pattern, update requests and tokens', async () => {
    await emu().control('POST', '/stats/reset');
    const token = await emu().token();
    const get = (path: string) => fetch(`${emu().url}${API}${path}`, { headers: { 'Service-Token': token } }).then((r) => r.arrayBuffer());
    await get('/members/face_image');
    await get('/members/face_image?updated_since=2026-01-01');
    await get('/tasks/5');
    await get('/tasks/6');
    await get('/tasks/7');
    addMember(emu(), 'C003');
    const res = await fetch(`${emu().url}${API}/members/face_image`, {
      method: 'POST',
      headers: { 'Service-Token': token, 'Content-Type': 'application/json' },
      body: JSON.stringify({ member_data: [{ code: 'C003', base64_face_image: b64(await jpeg()) }] }),
    });
    expect(res.status).toBe(200);
    const stats = await emu().control('GET', '/stats');
    expect(stats.requests).toEqual({
      'POST /token': 1,
      'GET /members/face_image': 2,
      'GET /tasks/:task_id': 3,
      'POST /members/face_image': 1,
    });
    expect(stats.update_requests).toBe(1);
    expect(stats.tokens_issued).toBe(1);
    expect(stats.rate_limited).toBe(0);
  });
});

describe('reset (DESIGN.md section 6)', () => {
  it('goes back to the seed, forgets tokens and clears the counters', async () => {
    addMember(emu(), 'C004');
    setPhoto(emu(), 'C004', await jpeg());
    const token = await emu().token();
    expect((await fetch(`${emu().url}${API}/members/face_image`, { headers: { 'Service-Token': token } })).status).toBe(200);
    expect((await emu().control('GET', '/state')).members.length).toBeGreaterThan(0);

    expect(await emu().control('POST', '/reset')).toEqual({ reset: true });
    // This company's seed is empty.
    expect(await emu().control('GET', '/state')).toEqual({ members: [], attachments: [] });
    const stats = await emu().control('GET', '/stats');
    expect(stats.requests).toEqual({});
    expect(stats.update_requests).toBe(0);
    expect(stats.tokens_issued).toBe(0);
    expect(stats.storage_downloads).toBe(0);
    expect((await fetch(`${emu().url}${API}/members/face_image`, { headers: { 'Service-Token': token } })).status).toBe(401);
  });
});

describe('reset with a seed (DESIGN.md section 6)', () => {
  const seeded = useEmulator({ generate: { members: 5, photo_ratio: 1, photo_bytes: [10_000, 10_000], attachments_per_member: [0, 0] } });

  it('brings back the seed members and photos, and drops what was added', async () => {
    const initial = await seeded().control('GET', '/state');
    expect(initial.members).toHaveLength(5);
    const first = initial.members[0];
    expect(first.photo).not.toBeNull();
    addMember(seeded(), 'EXTRA1');
    const res = await seeded().api('PATCH', '/members/face_image', { enable_trimming: false, member_data: [{ code: first.code, base64_face_image: b64(await jpeg()) }] });
    expect((await seeded().waitTask(res.body.task_id)).status).toBe('OK');
    const changed = await seeded().control('GET', '/state');
    expect(changed.members).toHaveLength(6);
    expect(changed.members.find((m: { code: string }) => m.code === first.code).photo.sha256).not.toBe(first.photo.sha256);

    await seeded().control('POST', '/reset');
    const after = await seeded().control('GET', '/state');
    expect(after.members.map((m: { code: string; photo: { sha256: string } }) => [m.code, m.photo.sha256])).toEqual(
      initial.members.map((m: { code: string; photo: { sha256: string } }) => [m.code, m.photo.sha256]),
    );
  });
});

describe('reset while a task runs (DESIGN.md section 6)', () => {
  const seeded = useEmulator({ generate: { members: 5, photo_ratio: 1, photo_bytes: [10_000, 10_000], attachments_per_member: [0, 0] } });

  it('lets the running task finish on the old data: the seed stands after the reset', async () => {
    const initial = await seeded().control('GET', '/state');
    const photos = await Promise.all(initial.members.map((_: unknown, i: number) => jpeg(2400, 3200, i + 2)));
    const body = { enable_trimming: true, member_data: initial.members.map((m: { code: string }, i: number) => ({ code: m.code, base64_face_image: b64(photos[i]!) })) };
    const res = await seeded().api('PATCH', '/members/face_image', body);
    expect(res.status).toBe(200);
    // The task falls due, and its job (decoding and trimming five large photos) starts at once;
    // the reset arrives while it runs.
    const company = companyOf(seeded());
    company.clock.advance(60);
    let jobDone = false;
    const running = company.tasks.tick().then(() => (jobDone = true));
    await seeded().control('POST', '/reset');
    expect(jobDone, 'the reset answered after the running job ended').toBe(true);
    await running;
    const after = await seeded().control('GET', '/state');
    expect(after.members.map((m: { code: string; photo: { sha256: string } }) => [m.code, m.photo.sha256])).toEqual(
      initial.members.map((m: { code: string; photo: { sha256: string } }) => [m.code, m.photo.sha256]),
    );
  });
});
