/**
 * Storage download benchmark: 2,000 photos of 100 KB from the in-process emulator over 16
 * connections, no latency. Target: all of them in under 2 s (the emulator must not be what makes
 * an export slow).
 *
 *   npx tsx bench/storage.ts            generated photos (bytes made on each download)
 *   npx tsx bench/storage.ts --stored   one 100 KB JPEG kept in memory, stored for every member
 */
import { Agent, request } from 'undici';
import sharp from 'sharp';
import { startEmulator, DEFAULT_CONSUMER_KEY, DEFAULT_CONSUMER_SECRET, type RunningEmulator } from '../src/emulator/index.js';

const MEMBERS = 2000;
const PHOTO_BYTES = 100_000;
const CONNECTIONS = 16;
const TARGET_MS = 2000;

const stored = process.argv.includes('--stored');

/** A real JPEG padded with comment segments (which decoders skip) to exactly `size` bytes. */
async function photoOfSize(size: number): Promise<Buffer> {
  const image = await sharp({ create: { width: 320, height: 400, channels: 3, background: { r: 200, g: 170, b: 150 } } }).jpeg().toBuffer();
  const segments: Buffer[] = [];
  let missing = size - image.length;
  while (missing > 0) {
    // A segment is 4 bytes of marker and length, then at most 65,533 bytes; never leave under 4.
    let take = Math.min(missing, 65_537);
    if (missing - take > 0 && missing - take < 4) take -= 4;
    const segment = Buffer.alloc(take, 0x41);
    segment.writeUInt16BE(0xfffe, 0);
    segment.writeUInt16BE(take - 2, 2);
    segments.push(segment);
    missing -= take;
  }
  const photo = Buffer.concat([image.subarray(0, 2), ...segments, image.subarray(2)]);
  if (photo.length !== size || (await sharp(photo).metadata()).format !== 'jpeg') throw new Error('the padded photo is not a JPEG of the size asked');
  return photo;
}

async function start(): Promise<RunningEmulator> {
  const common = { port: 0, clockStart: '2026-04-01 10:00:00' };
  if (!stored) {
    return startEmulator({ ...common, generate: { members: MEMBERS, photo_bytes: [PHOTO_BYTES, PHOTO_BYTES], photo_ratio: 1, attachments_per_member: [0, 0] } });
  }
  const running = await startEmulator(common);
  const company = running.emulator.company()!;
  const photo = await photoOfSize(PHOTO_BYTES);
  for (let i = 1; i <= MEMBERS; i += 1) {
    const code = `B${String(i).padStart(6, '0')}`;
    company.data.members[code] = {
      id: company.data.next_ids.member++, code, name: `Member ${code}`, name_kana: '', mail: '', entered_date: '2020-04-01', retired_date: '', gender: '', birthday: '',
      department_code: null, sub_department_codes: [], custom_fields: {}, updated_at: company.now(),
    };
    company.data.photos[code] = company.storeFile(photo, `${code}.jpg`);
  }
  return running;
}

async function listUrls(base: string, agent: Agent): Promise<string[]> {
  const auth = Buffer.from(`${DEFAULT_CONSUMER_KEY}:${DEFAULT_CONSUMER_SECRET}`).toString('base64');
  const tokenRes = await request(`${base}/api/v2.0/token`, {
    method: 'POST', dispatcher: agent, body: 'grant_type=client_credentials',
    headers: { authorization: `Basic ${auth}`, 'content-type': 'application/x-www-form-urlencoded' },
  });
  const { access_token } = (await tokenRes.body.json()) as { access_token: string };
  const listing = await request(`${base}/api/v2.0/members/face_image`, { dispatcher: agent, headers: { 'service-token': access_token } });
  if (listing.statusCode !== 200) throw new Error(`listing answered ${listing.statusCode}: ${await listing.body.text()}`);
  const { member_data } = (await listing.body.json()) as { member_data: { download_url: string }[] };
  return member_data.map((m) => m.download_url);
}

/** Downloads every URL with `CONNECTIONS` requests in flight; answers the bytes received. */
async function downloadAll(urls: string[], agent: Agent): Promise<number> {
  let next = 0;
  let bytes = 0;
  const worker = async (): Promise<void> => {
    while (next < urls.length) {
      const url = urls[next++]!;
      const res = await request(url, { dispatcher: agent });
      if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`);
      for await (const chunk of res.body) bytes += (chunk as Buffer).length;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  return bytes;
}

async function main(): Promise<void> {
  const setupStarted = performance.now();
  const running = await start();
  const agent = new Agent({ connections: CONNECTIONS, pipelining: 1 });
  try {
    const urls = await listUrls(running.url, agent);
    if (urls.length !== MEMBERS) throw new Error(`expected ${MEMBERS} photos listed, got ${urls.length}`);
    const setupMs = performance.now() - setupStarted;
    // Warm the connections and the code paths once, then measure.
    await downloadAll(urls.slice(0, CONNECTIONS * 4), agent);
    const started = performance.now();
    const bytes = await downloadAll(urls, agent);
    const ms = performance.now() - started;
    const mbPerSecond = bytes / 1e6 / (ms / 1000);
    console.log(`storage benchmark (${stored ? 'stored in memory' : 'generated'} photos, ${CONNECTIONS} connections, no latency)`);
    console.log(`  setup        ${setupMs.toFixed(0)} ms (start, ${MEMBERS} members, token, listing)`);
    console.log(`  files        ${urls.length}`);
    console.log(`  bytes        ${bytes} (${(bytes / 1e6).toFixed(1)} MB)`);
    console.log(`  wall time    ${ms.toFixed(0)} ms`);
    console.log(`  throughput   ${mbPerSecond.toFixed(1)} MB/s, ${(urls.length / (ms / 1000)).toFixed(0)} files/s`);
    console.log(`  target       under ${TARGET_MS} ms: ${ms < TARGET_MS ? 'yes' : 'NO'} (${(ms / TARGET_MS).toFixed(2)} of the budget)`);
    if (bytes !== MEMBERS * PHOTO_BYTES) throw new Error(`expected ${MEMBERS * PHOTO_BYTES} bytes, got ${bytes}`);
  } finally {
    await agent.close();
    await running.close();
  }
}

await main();
