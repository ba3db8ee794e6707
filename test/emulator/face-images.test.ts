import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { addMember, b64, companyOf, jpeg, png, setPhoto } from '../helpers/fixtures.js';
import { MAX_FILE_BYTES, MAX_PHOTOS_PER_REQUEST } from '../../src/spec/limits.js';
import { sniffPhotoType } from '../../src/spec/extensions.js';

const emu = useEmulator({ limits: { updatesPerMinute: 1000 } });
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

type Item = { code: string; base64_face_image: string };
const item = (code: string, data: Buffer): Item => ({ code, base64_face_image: b64(data) });

/** Sends a register (POST) or partial update (PATCH) and waits for its task. */
async function send(method: 'POST' | 'PATCH', items: Item[], trimming?: boolean): Promise<{ status: string; messages: string[] }> {
  const body = { ...(trimming === undefined ? {} : { enable_trimming: trimming }), member_data: items };
  const res = await emu().api(method, '/members/face_image', body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const { status, messages } = await emu().waitTask(res.body.task_id);
  return { status, messages };
}

async function statePhoto(code: string): Promise<{ sha256: string; size: number } | null> {
  const state = await emu().control('GET', '/state');
  return state.members.find((m: { code: string }) => m.code === code)?.photo ?? null;
}

/** The stored photo of a member, downloaded through a fresh listing. */
async function stored(code: string): Promise<Buffer> {
  const listing = await emu().api('GET', '/members/face_image');
  const entry = listing.body.member_data.find((m: { code: string }) => m.code === code);
  if (!entry) throw new Error(`no photo listed for ${code}`);
  return Buffer.from(await (await fetch(entry.download_url)).arrayBuffer());
}

describe('listing face image URLs (api-v2.md 4.4 Members 6)', () => {
  it('lists members with a photo, code, file_name, download_url and updated_at', async () => {
    addMember(emu(), 'L001');
    addMember(emu(), 'L002');
    setPhoto(emu(), 'L001', await jpeg());
    const res = await emu().api('GET', '/members/face_image');
    expect(res.status).toBe(200);
    const entry = res.body.member_data.find((m: { code: string }) => m.code === 'L001');
    expect(entry).toEqual({ code: 'L001', file_name: 'L001.jpg', download_url: expect.stringContaining('/storage/'), updated_at: expect.any(String) });
    expect(res.body.member_data.some((m: { code: string }) => m.code === 'L002')).toBe(false);
  });

  it('limits the list to photos updated on or after updated_since', async () => {
    addMember(emu(), 'L003');
    addMember(emu(), 'L004');
    setPhoto(emu(), 'L003', await jpeg());
    setPhoto(emu(), 'L004', await jpeg());
    // L003's photo dates from the evening of 20 March.
    companyOf(emu()).data.photos.L003!.updated_at = '2026-03-20 23:59:59';
    const today = (await emu().control('GET', '/clock')).now.slice(0, 10) as string;
    const codes = async (since: string) =>
      (await emu().api('GET', `/members/face_image?updated_since=${since}`)).body.member_data.map((m: { code: string }) => m.code);
    expect(await codes(today)).not.toContain('L003');
    expect(await codes(today)).toContain('L004');
    expect(await codes('2026-03-21')).not.toContain('L003');
    expect(await codes('2026-03-20')).toEqual(expect.arrayContaining(['L003', 'L004']));
    expect(await codes('2099-01-01')).toEqual([]);
  });

  it('answers 400 to an updated_since that is not a date', async () => {
    for (const bad of ['2026-13-01', '2026-02-30', 'yesterday', '2026-4-1', '2026-04-01 10:00:00']) {
      const res = await emu().api('GET', `/members/face_image?updated_since=${encodeURIComponent(bad)}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.errors[0]).toMatch(/updated_since/);
    }
  });
});

describe('register and partial update (api-v2.md 4.4 Members 7)', () => {
  it('registers only for members without a photo, and updates only members with one', async () => {
    addMember(emu(), 'P001');
    addMember(emu(), 'P002');
    const first = await jpeg(30, 30, 1);
    expect(await send('PATCH', [item('P001', first)])).toEqual({ status: 'NG', messages: [expect.stringMatching(/P001.*has no face image/)] });
    expect(await statePhoto('P001')).toBeNull();
    expect((await send('POST', [item('P001', first)], false)).status).toBe('OK');
    expect((await statePhoto('P001'))?.sha256).toBe(sha256(first));

    const second = await jpeg(30, 30, 2);
    expect(await send('POST', [item('P001', second)])).toEqual({ status: 'NG', messages: [expect.stringMatching(/P001.*already has a face image/)] });
    expect((await statePhoto('P001'))?.sha256).toBe(sha256(first));
    expect((await send('PATCH', [item('P001', second)], false)).status).toBe('OK');
    expect((await statePhoto('P001'))?.sha256).toBe(sha256(second));
  });

  it('accepts a PNG and a GIF by their bytes, and stores them as JPEG', async () => {
    addMember(emu(), 'P003');
    addMember(emu(), 'P004');
    const gif = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#336699' } }).gif().toBuffer();
    expect((await send('POST', [item('P003', await png()), item('P004', gif)])).status).toBe('OK');
    expect(sniffPhotoType(await stored('P003'))).toBe('jpeg');
    expect(sniffPhotoType(await stored('P004'))).toBe('jpeg');
  });

  it('refuses a text file, a WebP image and a JPEG signature over garbage, naming the member', async () => {
    addMember(emu(), 'P005');
    addMember(emu(), 'P006');
    addMember(emu(), 'P007');
    const webp = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#ff0000' } }).webp().toBuffer();
    const fake = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('this is no image at all, just text')]);
    for (const trimming of [true, false]) {
      const task = await send('POST', [item('P005', Buffer.from('name,photo\nP005,photo.jpg\n')), item('P006', webp), item('P007', fake)], trimming);
      expect(task.status).toBe('NG');
      expect(task.messages).toEqual([
        expect.stringMatching(/P005.*not a JPEG, GIF or PNG/),
        expect.stringMatching(/P006.*not a JPEG, GIF or PNG/),
        expect.stringMatching(/P007.*could not be read/),
      ]);
    }
    for (const code of ['P005', 'P006', 'P007']) expect(await statePhoto(code)).toBeNull();
  });

  it('accepts exactly 5 MB and refuses 5 MB and one byte', async () => {
    addMember(emu(), 'P008');
    addMember(emu(), 'P009');
    const base = await jpeg(64, 64, 5);
    // A JPEG followed by padding: image readers stop at the end-of-image marker.
    const exact = Buffer.concat([base, Buffer.alloc(MAX_FILE_BYTES - base.length)]);
    const over = Buffer.concat([base, Buffer.alloc(MAX_FILE_BYTES + 1 - base.length)]);
    const ng = await send('POST', [item('P009', over)], false);
    expect(ng).toEqual({ status: 'NG', messages: [expect.stringMatching(/P009.*5242881 bytes.*5 MB/)] });
    expect(await send('POST', [item('P008', exact)], false)).toEqual({ status: 'OK', messages: [] });
    expect(await statePhoto('P008')).toEqual(expect.objectContaining({ size: MAX_FILE_BYTES, sha256: sha256(exact) }));
  });

  it('takes 100 members in one request and answers 101 with 400', async () => {
    const photo = await jpeg(16, 16, 6);
    const items = Array.from({ length: MAX_PHOTOS_PER_REQUEST + 1 }, (_, i) => {
      const code = `M${String(i).padStart(4, '0')}`;
      addMember(emu(), code);
      return item(code, photo);
    });
    const tooMany = await emu().api('POST', '/members/face_image', { member_data: items });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.errors[0]).toMatch(/101.*100/);
    expect(await send('POST', items.slice(0, 100), false)).toEqual({ status: 'OK', messages: [] });
    const listed = (await emu().api('GET', '/members/face_image')).body.member_data.filter((m: { code: string }) => m.code.startsWith('M'));
    expect(listed).toHaveLength(100);
  });

  it('answers 400 to a body without member_data or with an empty one', async () => {
    expect((await emu().api('POST', '/members/face_image', { enable_trimming: true })).status).toBe(400);
    expect((await emu().api('POST', '/members/face_image', { member_data: [] })).status).toBe(400);
    expect((await emu().api('POST', '/members/face_image', { member_data: [{ code: 'X' }] })).status).toBe(400);
  });

  it('ends NG for invalid base64, a data: prefix, an unknown member code and a repeated code', async () => {
    addMember(emu(), 'P010');
    addMember(emu(), 'P011');
    addMember(emu(), 'P012');
    const photo = await jpeg();
    const task = await send('POST', [
      { code: 'P010', base64_face_image: 'not base64 at all!' },
      { code: 'P011', base64_face_image: `data:image/jpeg;base64,${b64(photo)}` },
      item('NOSUCH', photo),
      item('P012', photo),
      item('P012', photo),
    ]);
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual([
      expect.stringMatching(/P010.*base64/),
      expect.stringMatching(/P011.*data: prefix/),
      expect.stringMatching(/NOSUCH.*no member has this code/),
      expect.stringMatching(/P012.*more than once/),
    ]);
  });

  it('changes nothing when a task is NG, not even for the valid items', async () => {
    addMember(emu(), 'P013');
    addMember(emu(), 'P014');
    setPhoto(emu(), 'P014', await jpeg(20, 20, 1));
    const before = await statePhoto('P014');
    const task = await send('POST', [item('P013', await jpeg()), item('UNKNOWN1', await jpeg())]);
    expect(task.status).toBe('NG');
    expect(await statePhoto('P013')).toBeNull();
    const update = await send('PATCH', [item('P014', await jpeg(20, 20, 2)), item('P013', await jpeg())]);
    expect(update.status).toBe('NG');
    expect(await statePhoto('P014')).toEqual(before);
  });
});

describe('trimming (api-v2.md 4.4 Members 7; DESIGN.md section 6)', () => {
  /** 90 x 30: red, green and blue thirds; a centred square is all green. */
  const stripes = (): Promise<Buffer> => {
    const raw = Buffer.alloc(90 * 30 * 3);
    for (let y = 0; y < 30; y += 1) {
      for (let x = 0; x < 90; x += 1) {
        const at = (y * 90 + x) * 3;
        raw[at + Math.floor(x / 30)] = 255;
      }
    }
    return sharp(raw, { raw: { width: 90, height: 30, channels: 3 } }).png().toBuffer();
  };

  it('crops to a centred square when enable_trimming is not given (default true)', async () => {
    addMember(emu(), 'T001');
    expect((await send('POST', [item('T001', await stripes())])).status).toBe('OK');
    const photo = await stored('T001');
    const meta = await sharp(photo).metadata();
    expect(meta.format).toBe('jpeg');
    expect([meta.width, meta.height]).toEqual([30, 30]);
    const { data } = await sharp(photo).raw().toBuffer({ resolveWithObject: true });
    for (const at of [0, (15 * 30 + 15) * 3, (29 * 30 + 29) * 3]) {
      expect(data[at + 1]!).toBeGreaterThan(200);
      expect(data[at]!).toBeLessThan(60);
      expect(data[at + 2]!).toBeLessThan(60);
    }
  });

  it('crops a tall image too, and with enable_trimming true', async () => {
    addMember(emu(), 'T002');
    expect((await send('POST', [item('T002', await jpeg(40, 100))], true)).status).toBe('OK');
    const meta = await sharp(await stored('T002')).metadata();
    expect([meta.width, meta.height]).toEqual([40, 40]);
  });

  it('keeps a JPEG byte for byte with enable_trimming false', async () => {
    addMember(emu(), 'T003');
    const original = await jpeg(90, 30, 8);
    expect((await send('POST', [item('T003', original)], false)).status).toBe('OK');
    const photo = await stored('T003');
    expect(photo.equals(original)).toBe(true);
    expect((await sharp(photo).metadata()).width).toBe(90);
  });
});

describe('Dry-Run on face images (api-v2.md 4.1)', () => {
  it('validates a register and stores nothing', async () => {
    addMember(emu(), 'Y001');
    const res = await emu().api('POST', '/members/face_image', { member_data: [item('Y001', await jpeg())] }, { 'Dry-Run': '1' });
    expect((await emu().waitTask(res.body.task_id)).status).toBe('OK');
    expect(await statePhoto('Y001')).toBeNull();
  });
});
