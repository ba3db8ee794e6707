/**
 * The SDK's face images, sheets and attachments against the in-process emulator (issue 3: every
 * method with a real round trip). Download URLs are fetched with undici `request` and no token, as
 * a pre-signed storage URL takes none (wire-format.md, Face images).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import sharp from 'sharp';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { addMember, addSheet, b64, companyOf, field, jpeg, png, setPhoto } from '../helpers/fixtures.js';
import type { TaskRef, WdsClient } from '../../src/index.js';

// The service clock all but stands still, so the times the tests expect do not tick on under load;
// tasks then take no service time at all (at this speed 5 service ms would be 5 real seconds).
const emu = useEmulator({ clockSpeed: 0.001, limits: { updatesPerMinute: 10_000, requestsPerHour: 1_000_000 }, taskTiming: { waitMs: 0, runMs: 0, perItemMs: 0 } });
let client: WdsClient;

beforeAll(() => {
  client = clientFor(emu(), { limits: { update: { limit: 10_000, windowMs: 60_000 }, request: { limit: 1_000_000, windowMs: 3_600_000 } } });
});
afterAll(async () => {
  await client.close();
});

beforeEach(async () => {
  await companyOf(emu()).reset();
});

const done = async (ref: Promise<TaskRef>) => client.tasks.wait((await ref).taskId, { intervalMs: 5, throwOnFailure: true });

/** Downloads a pre-signed URL with no header at all: no Service-Token, no Authorization. */
async function download(url: string): Promise<{ status: number; type: string; data: Buffer }> {
  const res = await request(url);
  const data = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, type: String(res.headers['content-type']), data };
}

describe('client.faceImages', () => {
  it('list answers a download URL per photo that downloads without a Service-Token', async () => {
    addMember(emu(), 'M001');
    const photo = await jpeg(40, 30, 3);
    setPhoto(emu(), 'M001', photo);
    const listed = await client.faceImages.list();
    expect(listed).toEqual([{ code: 'M001', file_name: 'M001.jpg', download_url: expect.any(String), updated_at: '2026-04-01 10:00:00' }]);
    // The URL is not on the API path: the client's token must not be needed (nor sent) there.
    expect(listed[0]!.download_url).not.toContain('/api/v2.0');
    const got = await download(listed[0]!.download_url);
    expect(got.status).toBe(200);
    expect(got.type).toBe('image/jpeg');
    expect(got.data.equals(photo)).toBe(true);
  });

  it('list({updatedSince}) answers only photos updated on or after that day', async () => {
    addMember(emu(), 'OLD');
    addMember(emu(), 'NEW');
    setPhoto(emu(), 'OLD', await jpeg());
    setPhoto(emu(), 'NEW', await jpeg());
    companyOf(emu()).data.photos.OLD!.updated_at = '2026-03-15 09:00:00';
    expect((await client.faceImages.list()).map((p) => p.code).sort()).toEqual(['NEW', 'OLD']);
    expect((await client.faceImages.list({ updatedSince: '2026-04-01' })).map((p) => p.code)).toEqual(['NEW']);
    expect((await client.faceImages.list({ updatedSince: '2026-03-15' })).map((p) => p.code).sort()).toEqual(['NEW', 'OLD']);
  });

  it('register stores a photo, trimmed to a square by default and as sent with {trimming: false}', async () => {
    addMember(emu(), 'T001');
    addMember(emu(), 'T002');
    const sent = await jpeg(64, 48, 5);
    await done(client.faceImages.register([{ code: 'T001', base64_face_image: b64(sent) }]));
    await done(client.faceImages.register([{ code: 'T002', base64_face_image: b64(sent) }], { trimming: false }));
    const byCode = new Map((await client.faceImages.list()).map((p) => [p.code, p.download_url]));
    const trimmed = await download(byCode.get('T001')!);
    expect(await sharp(trimmed.data).metadata()).toMatchObject({ width: 48, height: 48 });
    const untouched = await download(byCode.get('T002')!);
    expect(untouched.data.equals(sent)).toBe(true);
  });

  it('register takes a streamed body in pieces, and the photo stored is the one streamed', async () => {
    addMember(emu(), 'S001');
    const sent = await jpeg(64, 48, 7);
    const json = JSON.stringify({ enable_trimming: false, member_data: [{ code: 'S001', base64_face_image: b64(sent) }] });
    let streamed = 0;
    const body = {
      async *stream() {
        streamed++;
        for (let at = 0; at < json.length; at += 100) yield Buffer.from(json.slice(at, at + 100));
      },
    };
    await done(client.faceImages.register(body));
    expect(streamed).toBe(1);
    const listed = await client.faceImages.list();
    expect((await download(listed[0]!.download_url)).data.equals(sent)).toBe(true);
  });

  it('update replaces an existing photo (a PNG is served as JPEG), with and without trimming', async () => {
    addMember(emu(), 'U001');
    addMember(emu(), 'U002');
    setPhoto(emu(), 'U001', await jpeg(10, 10));
    setPhoto(emu(), 'U002', await jpeg(10, 10));
    const sent = await png(64, 48);
    await done(client.faceImages.update([{ code: 'U001', base64_face_image: b64(sent) }], { trimming: false }));
    await done(client.faceImages.update([{ code: 'U002', base64_face_image: b64(sent) }], { trimming: true }));
    const byCode = new Map((await client.faceImages.list()).map((p) => [p.code, p.download_url]));
    expect(await sharp((await download(byCode.get('U001')!)).data).metadata()).toMatchObject({ format: 'jpeg', width: 64, height: 48 });
    expect(await sharp((await download(byCode.get('U002')!)).data).metadata()).toMatchObject({ format: 'jpeg', width: 48, height: 48 });
  });

  it('register for a member who already has a photo ends NG naming the member', async () => {
    addMember(emu(), 'P001');
    setPhoto(emu(), 'P001', await jpeg());
    const { taskId } = await client.faceImages.register([{ code: 'P001', base64_face_image: b64(await jpeg()) }]);
    const task = await client.tasks.wait(taskId, { intervalMs: 5 });
    expect(task.status).toBe('NG');
    expect(task.messages.join('\n')).toContain('P001');
  });
});

const options = (...names: string[]) => names.map((name, i) => ({ id: i + 1, name }));

describe('client.sheets', () => {
  beforeEach(() => {
    addSheet(emu(), {
      id: 1, name: 'Skills', record_type: 0,
      fields: [field(101, 'Level', 'pulldown', { options: options('Junior', 'Senior') }), field(102, 'Years', 'number_box'), field(103, 'Double', 'calc_formula', { formula: '{102} * 2' })],
    });
    addSheet(emu(), { id: 2, name: 'History', record_type: 1, fields: [field(201, 'Company', 'text_box', { max_length: 50 })] });
    addMember(emu(), 'S001');
    addMember(emu(), 'S002');
  });

  const valuesOf = async (sheetId: number, code: string) => {
    const sheet = await client.sheets.get(sheetId);
    const member = sheet.member_data.find((m) => m.code === code);
    return (member?.records ?? []).map((r) => Object.fromEntries(r.custom_fields.map((f) => [f.id, f.values])));
  };

  it('layouts answers every sheet; formula parts only with getCalcType', async () => {
    const layouts = await client.sheets.layouts();
    expect(layouts.map((s) => [s.id, s.name, s.record_type])).toEqual([[1, 'Skills', 0], [2, 'History', 1]]);
    expect(layouts[0]!.custom_fields.map((f) => f.id)).toEqual([101, 102]);
    const withCalc = await client.sheets.layouts({ getCalcType: true });
    expect(withCalc[0]!.custom_fields.map((f) => f.id)).toEqual([101, 102, 103]);
    expect(withCalc[0]!.custom_fields[2]).toMatchObject({ type_detail: 'calc_formula' });
  });

  it('layout(id) answers one sheet', async () => {
    const layout = await client.sheets.layout(1);
    expect(layout).toMatchObject({ id: 1, name: 'Skills', record_type: 0 });
    expect(layout.custom_fields[0]).toMatchObject({ id: 101, name: 'Level', type_detail: 'pull_down', enum: ['Junior', 'Senior'] });
    expect((await client.sheets.layout(1, { getCalcType: true })).custom_fields).toHaveLength(3);
  });

  it('get(id) answers the records of every member', async () => {
    companyOf(emu()).data.sheets['2']!.records.S001 = [{ values: { 201: ['Acme'] }, files: {} }, { values: { 201: ['Initech'] }, files: {} }];
    const sheet = await client.sheets.get(2);
    expect(sheet).toMatchObject({ id: 2, name: 'History', record_type: 1, updated_at: expect.any(String) });
    expect(await valuesOf(2, 'S001')).toEqual([{ 201: ['Acme'] }, { 201: ['Initech'] }]);
  });

  it('bulkUpdate sets the members sent; absent values are cleared; formulas are recalculated', async () => {
    companyOf(emu()).data.sheets['1']!.records.S001 = [{ values: { 101: ['Junior'], 102: ['1'] }, files: {} }];
    await done(client.sheets.bulkUpdate(1, [{ member_code: 'S001', custom_fields: [{ id: 102, values: ['4'] }] }]));
    const [record] = await valuesOf(1, 'S001');
    expect(record![101]).toEqual(['']);
    expect(record![102]).toEqual(['4']);
    expect((await client.sheets.get(1, { getCalcType: true })).member_data.find((m) => m.code === 'S001')!.records![0]!.custom_fields.find((f) => f.id === 103)!.values).toEqual(['8']);
  });

  it('partialUpdate changes only the values sent on a single-record sheet', async () => {
    companyOf(emu()).data.sheets['1']!.records.S001 = [{ values: { 101: ['Junior'], 102: ['1'] }, files: {} }];
    await done(client.sheets.partialUpdate(1, [{ member_code: 'S001', records: [{ custom_fields: [{ id: 101, values: ['Senior'] }] }] }]));
    const [record] = await valuesOf(1, 'S001');
    expect(record![101]).toEqual(['Senior']);
    expect(record![102]).toEqual(['1']);
  });

  it('addRecords appends records on a multiple-record sheet', async () => {
    companyOf(emu()).data.sheets['2']!.records.S002 = [{ values: { 201: ['First'] }, files: {} }];
    await done(client.sheets.addRecords(2, [{ member_code: 'S002', records: [{ custom_fields: [{ id: 201, values: ['Second'] }] }, { custom_fields: [{ id: 201, values: ['Third'] }] }] }]));
    expect(await valuesOf(2, 'S002')).toEqual([{ 201: ['First'] }, { 201: ['Second'] }, { 201: ['Third'] }]);
  });
});

describe('client.attachments', () => {
  beforeEach(() => {
    addSheet(emu(), { id: 5, name: 'Documents', record_type: 1, fields: [field(501, 'File', 'attach_file'), field(502, 'Note', 'text_box')] });
    addMember(emu(), 'A001');
    addMember(emu(), 'A002');
  });

  const file = (name: string, text: string) => ({ file_name: name, base64_content: Buffer.from(text).toString('base64') });

  it('register adds files, list answers their URLs, and the URLs download without a token', async () => {
    await done(client.attachments.register(5, 501, [{ code: 'A001', records: [file('cv.txt', 'curriculum'), file('id.csv', 'a,b\n')] }]));
    const listed = await client.attachments.list(5, 501);
    expect(listed).toEqual([{
      code: 'A001',
      records: [
        { file_name: 'cv.txt', download_url: expect.any(String), updated_at: '2026-04-01 10:00:00' },
        { file_name: 'id.csv', download_url: expect.any(String), updated_at: '2026-04-01 10:00:00' },
      ],
    }]);
    const got = await download(listed[0]!.records[0]!.download_url);
    expect(got.status).toBe(200);
    expect(got.data.toString()).toBe('curriculum');
  });

  it('update replaces the file of the same name', async () => {
    await done(client.attachments.register(5, 501, [{ code: 'A002', records: [file('plan.txt', 'version 1')] }]));
    await done(client.attachments.update(5, 501, [{ code: 'A002', records: [file('plan.txt', 'version 2')] }]));
    const listed = await client.attachments.list(5, 501);
    expect(listed.map((m) => m.records.map((r) => r.file_name))).toEqual([['plan.txt']]);
    expect((await download(listed[0]!.records[0]!.download_url)).data.toString()).toBe('version 2');
  });

  it('update takes a streamed body, and the file stored is the one streamed', async () => {
    await done(client.attachments.register(5, 501, [{ code: 'A002', records: [file('plan.txt', 'version 1')] }]));
    const json = JSON.stringify({ member_data: [{ code: 'A002', records: [file('plan.txt', 'version 2')] }] });
    await done(client.attachments.update(5, 501, { stream: async function* () { yield Buffer.from(json); } }));
    const listed = await client.attachments.list(5, 501);
    expect((await download(listed[0]!.records[0]!.download_url)).data.toString()).toBe('version 2');
  });

  it('list({updatedSince}) answers only files updated on or after that day', async () => {
    await done(client.attachments.register(5, 501, [{ code: 'A001', records: [file('old.txt', 'o')] }, { code: 'A002', records: [file('new.txt', 'n')] }]));
    companyOf(emu()).data.sheets['5']!.records.A001![0]!.files['501']!.updated_at = '2026-03-01 08:00:00';
    expect((await client.attachments.list(5, 501, { updatedSince: '2026-04-01' })).map((m) => m.code)).toEqual(['A002']);
    expect((await client.attachments.list(5, 501, { updatedSince: '2026-03-01' })).map((m) => m.code)).toEqual(['A001', 'A002']);
  });
});
