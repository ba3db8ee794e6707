import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useEmulator, type TestEmulator } from '../helpers/emulator.js';
import { addMember, b64, companyOf, jpeg, setPhoto } from '../helpers/fixtures.js';
import { rawRequest } from '../helpers/raw-http.js';
import { DOWNLOAD_URL_LIFETIME_SECONDS } from '../../src/spec/limits.js';

const emu = useEmulator({ limits: { updatesPerMinute: 1000 } });

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

/** The download URL listed now for a member's photo. */
async function urlOf(e: TestEmulator, code: string): Promise<string> {
  const listing = await e.api('GET', '/members/face_image');
  expect(listing.status).toBe(200);
  const entry = listing.body.member_data.find((m: { code: string }) => m.code === code);
  if (!entry) throw new Error(`no photo listed for ${code}`);
  return entry.download_url as string;
}

async function download(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const res = await fetch(url, { headers });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

/** A photo-sized blob of known bytes (storage serves whatever was stored). */
function photoBytes(size: number): Buffer {
  const data = randomBytes(size);
  data.set([0xff, 0xd8, 0xff], 0);
  return data;
}

describe('pre-signed download URLs (DESIGN.md section 6; wire-format.md, Face images)', () => {
  it('serves the file without a token, on a /storage/ path with Expires= in epoch seconds 15 minutes ahead', async () => {
    const photo = photoBytes(5000);
    addMember(emu(), 'S001');
    setPhoto(emu(), 'S001', photo);
    const url = new URL(await urlOf(emu(), 'S001'));
    expect(url.pathname.startsWith('/storage/')).toBe(true);
    const expires = Number(url.searchParams.get('Expires'));
    expect(Number.isInteger(expires)).toBe(true);
    const now = (await emu().control('GET', '/clock')).epoch_ms as number;
    expect(expires - now / 1000).toBeGreaterThan(DOWNLOAD_URL_LIFETIME_SECONDS - 5);
    expect(expires - now / 1000).toBeLessThanOrEqual(DOWNLOAD_URL_LIFETIME_SECONDS);
    const res = await download(url.href);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/jpeg');
    expect(res.body.equals(photo)).toBe(true);
  });

  it('answers 403 when the signature, the deadline or the file of a URL was changed', async () => {
    addMember(emu(), 'S002');
    setPhoto(emu(), 'S002', photoBytes(1000));
    addMember(emu(), 'S003');
    setPhoto(emu(), 'S003', photoBytes(1000));
    const url = new URL(await urlOf(emu(), 'S002'));
    const other = new URL(await urlOf(emu(), 'S003'));

    const signature = url.searchParams.get('Signature')!;
    const tampered = new URL(url);
    tampered.searchParams.set('Signature', `${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`);
    const later = new URL(url);
    later.searchParams.set('Expires', String(Number(url.searchParams.get('Expires')) + 3600));
    const swapped = new URL(url);
    swapped.pathname = other.pathname;
    const unsigned = new URL(url);
    unsigned.searchParams.delete('Signature');
    for (const bad of [tampered, later, swapped, unsigned]) {
      const res = await download(bad.href);
      expect(res.status, bad.href).toBe(403);
      expect(JSON.parse(res.body.toString()).errors[0]).toMatch(/signature/);
    }
    expect((await download(url.href)).status).toBe(200);
  });

  it('answers 403 once 15 minutes of service time have passed', async () => {
    addMember(emu(), 'S004');
    setPhoto(emu(), 'S004', photoBytes(1000));
    const url = await urlOf(emu(), 'S004');
    await emu().control('POST', '/clock', { advance_seconds: DOWNLOAD_URL_LIFETIME_SECONDS - 60 });
    expect((await download(url)).status).toBe(200);
    await emu().control('POST', '/clock', { advance_seconds: 61 });
    const expired = await download(url);
    expect(expired.status).toBe(403);
    expect(JSON.parse(expired.body.toString()).errors[0]).toMatch(/expired/);
    // A fresh listing gives a working URL again.
    expect((await download(await urlOf(emu(), 'S004'))).status).toBe(200);
  });

  it('ties a URL to the file as listed: after a replacement the old URL serves the old bytes, a new listing the new', async () => {
    addMember(emu(), 'S005');
    const first = await jpeg(40, 40, 1);
    setPhoto(emu(), 'S005', first);
    const oldUrl = await urlOf(emu(), 'S005');
    const second = await jpeg(40, 40, 9);
    const res = await emu().api('PATCH', '/members/face_image', { enable_trimming: false, member_data: [{ code: 'S005', base64_face_image: b64(second) }] });
    expect((await emu().waitTask(res.body.task_id)).status).toBe('OK');
    expect(sha256((await download(oldUrl)).body)).toBe(sha256(first));
    const newUrl = await urlOf(emu(), 'S005');
    expect(newUrl).not.toBe(oldUrl);
    expect(sha256((await download(newUrl)).body)).toBe(sha256(second));
    // Ten minutes on, the old URL is still valid and still the old file.
    await emu().control('POST', '/clock', { advance_seconds: 600 });
    expect(sha256((await download(oldUrl)).body)).toBe(sha256(first));
  });
});

describe('Range requests and HEAD on storage', () => {
  const size = 10_000;
  const photo = photoBytes(size);
  let url = '';
  const fresh = async (): Promise<string> => {
    addMember(emu(), 'R001');
    setPhoto(emu(), 'R001', photo);
    url = await urlOf(emu(), 'R001');
    return url;
  };

  it('answers bytes=0-99 with 206, Content-Range and exactly those bytes', async () => {
    const res = await rawRequest(await fresh(), { headers: { Range: 'bytes=0-99' } });
    expect(res.status).toBe(206);
    expect(res.headers['content-range']).toBe(`bytes 0-99/${size}`);
    expect(res.headers['content-length']).toBe('100');
    expect(res.body.equals(photo.subarray(0, 100))).toBe(true);
    expect(res.headers['accept-ranges']).toBe('bytes');
  });

  it('answers a suffix range and an open range', async () => {
    const suffix = await rawRequest(await fresh(), { headers: { Range: 'bytes=-50' } });
    expect(suffix.status).toBe(206);
    expect(suffix.headers['content-range']).toBe(`bytes ${size - 50}-${size - 1}/${size}`);
    expect(suffix.body.equals(photo.subarray(size - 50))).toBe(true);
    const open = await rawRequest(url, { headers: { Range: 'bytes=9000-' } });
    expect(open.status).toBe(206);
    expect(open.body.equals(photo.subarray(9000))).toBe(true);
    const beyondEnd = await rawRequest(url, { headers: { Range: 'bytes=9990-20000' } });
    expect(beyondEnd.headers['content-range']).toBe(`bytes 9990-9999/${size}`);
    expect(beyondEnd.body.length).toBe(10);
  });

  it('answers an unsatisfiable range 416 with Content-Range bytes */size', async () => {
    for (const range of [`bytes=${size}-`, 'bytes=-0', `bytes=${size + 5}-${size + 10}`]) {
      const res = await rawRequest(await fresh(), { headers: { Range: range } });
      expect(res.status, range).toBe(416);
      expect(res.headers['content-range']).toBe(`bytes */${size}`);
    }
  });

  it('answers HEAD with the headers of the file and no body', async () => {
    const res = await rawRequest(await fresh(), { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBe(String(size));
    expect(res.headers['content-type']).toBe('image/jpeg');
    expect(res.body.length).toBe(0);
  });

  it('counts downloads in stats.storage_downloads', async () => {
    const target = await fresh();
    await emu().control('POST', '/stats/reset');
    for (let i = 0; i < 4; i += 1) expect((await download(target)).status).toBe(200);
    await rawRequest(target, { headers: { Range: 'bytes=0-9' } });
    const stats = await emu().control('GET', '/stats');
    expect(stats.storage_downloads).toBe(5);
    expect(stats.storage_bytes).toBe(4 * size + 10);
    // Downloads are not API requests.
    expect(Object.keys(stats.requests).some((route) => route.includes('storage'))).toBe(false);
  });
});

describe('replaced versions (api-v2.md 4.4 Members 6)', () => {
  it('serves a replaced photo to URLs listed before, and drops it once no such URL can be valid', async () => {
    addMember(emu(), 'G001');
    const first = photoBytes(4_000);
    setPhoto(emu(), 'G001', first);
    const oldUrl = await urlOf(emu(), 'G001');
    const company = companyOf(emu());
    const oldBlob = company.data.photos.G001!.blob;
    setPhoto(emu(), 'G001', photoBytes(5_000));
    const served = await download(oldUrl);
    expect(served.status).toBe(200);
    expect(sha256(served.body)).toBe(sha256(first));
    // Past the URL lifetime (and the emulator's minute of grace), the old version is gone.
    await emu().control('POST', '/clock', { advance_seconds: DOWNLOAD_URL_LIFETIME_SECONDS + 61 });
    await new Promise((r) => setTimeout(r, 60));
    expect(company.blobs.get(oldBlob)).toBeUndefined();
    expect(company.blobs.get(company.data.photos.G001!.blob)).toBeDefined();
  });
});
