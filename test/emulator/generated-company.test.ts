/**
 * A generated company answers the same, byte for byte, however it holds its members: the digests
 * below were taken from the emulator that made every member at start (before members were made on
 * demand, issue 46). Each company is read whole (members, photos, both sheets, their attachment
 * listings, departments, users, enum options, the control state with every file's sha256), then
 * changed (a member deleted and registered again under its code, one updated, a photo replaced, an
 * attachment added, a department tree that keeps every member's department), and read again.
 * Download URLs differ by run (blob ids, signatures, the port) and are compared by their file
 * names and the bytes they serve (the state's sha256 of the same file); times after the start, by
 * whether they are the start's.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { launch, type TestEmulator } from '../helpers/emulator.js';
import { b64, jpeg } from '../helpers/fixtures.js';
import type { GenerateOptions } from '../../src/emulator/generate.js';

const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

/** The answer with its run-dependent parts replaced: URLs by their file names, times by SEED or LATER. */
function normalized(text: string, seeded: string): string {
  return text
    .replace(/http:\/\/[^"]*?\/storage\/[^/"]+\/[^/"]+\/([^?"]+)\?[^"]*/g, 'URL/$1')
    .replace(/2026-04-01 1\d:\d\d:\d\d/g, (t) => (t === seeded ? 'SEED' : 'LATER'));
}

async function readAll(emu: TestEmulator, seeded: string): Promise<string[]> {
  const paths = [
    '/members', '/members/face_image', '/members/face_image?updated_since=2026-04-02', '/sheets/1', '/sheets/2', '/sheets/2?get_calc_type=true',
    '/sheets/1/custom_fields/1204/file', '/sheets/2/custom_fields/1306/file', '/departments', '/users', '/enum_options',
  ];
  const out: string[] = [];
  for (const path of paths) {
    const res = await emu.api('GET', path);
    out.push(`${path} ${res.status} ${normalized(JSON.stringify(res.body), seeded)}`);
  }
  const state = await emu.control('GET', '/state');
  out.push(`state ${normalized(JSON.stringify(state), seeded)}`);
  // Every listed URL serves the file the state describes.
  const photos = (await emu.api('GET', '/members/face_image')).body.member_data as { code: string; download_url: string }[];
  const byCode = new Map((state.members as { code: string; photo: { sha256: string } | null }[]).map((m) => [m.code, m.photo?.sha256]));
  for (const photo of photos.filter((_, i) => i % 7 === 0)) {
    expect(sha256(Buffer.from(await (await fetch(photo.download_url)).arrayBuffer())), photo.code).toBe(byCode.get(photo.code));
  }
  const files = (await emu.api('GET', '/sheets/2/custom_fields/1306/file')).body.member_data as { code: string; records: { download_url: string }[] }[];
  const attachments = (state.attachments as { custom_field_id: number; code: string; record_index: number; sha256: string }[]).filter((a) => a.custom_field_id === 1306);
  for (const member of files.filter((_, i) => i % 5 === 0)) {
    for (const [index, record] of member.records.entries()) {
      const want = attachments.find((a) => a.code === member.code && a.record_index === index)?.sha256;
      expect(sha256(Buffer.from(await (await fetch(record.download_url)).arrayBuffer())), member.code).toBe(want);
    }
  }
  return out;
}

async function task(emu: TestEmulator, method: string, path: string, body: unknown): Promise<string> {
  const res = await emu.api(method, path, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const done = await emu.waitTask(res.body.task_id);
  return `${method} ${path} ${done.status} ${JSON.stringify(done.messages)}`;
}

async function change(emu: TestEmulator): Promise<string[]> {
  await emu.control('POST', '/clock', { advance_seconds: 120 });
  const departments = (await emu.api('GET', '/departments')).body.department_data as { code: string; name: string; parent_code: string | null }[];
  return [
    await task(emu, 'POST', '/members/delete', { codes: ['G000003', 'G000010'] }),
    await task(emu, 'POST', '/members', { member_data: [{ code: 'G000003', name: 'Again' }, { code: 'A0001', name: 'New' }] }),
    await task(emu, 'PATCH', '/members', { member_data: [{ code: 'G000005', name: 'Renamed' }] }),
    await task(emu, 'PATCH', '/members/face_image', { member_data: [{ code: 'G000007', base64_face_image: b64(await jpeg(64, 64, 3)) }] }),
    await task(emu, 'POST', '/members/face_image', { member_data: [{ code: 'A0001', base64_face_image: b64(await jpeg(64, 64, 4)) }] }),
    await task(emu, 'POST', '/sheets/2/custom_fields/1306/file', { member_data: [{ code: 'G000001', records: [{ file_name: 'extra.csv', base64_content: b64(Buffer.from('a,b\n')) }] }] }),
    await task(emu, 'PUT', '/departments', { department_data: departments.slice(0, -1).map((d) => ({ code: d.code, name: d.name, parent_code: d.parent_code })) }),
    await task(emu, 'PUT', '/departments', { department_data: [...departments, { code: 'D9999', name: 'New', parent_code: departments[0]!.code }] }),
  ];
}

/** Small companies of each shape; the digests are of the emulator before members were made on demand. */
const CASES: { name: string; options: GenerateOptions; digest: string }[] = [
  { name: 'defaults', options: { members: 120 }, digest: '39b00ba39937cb9c6bb81c248438205df7fda33685c376938917c287262cf36e' },
  { name: 'without files', options: { members: 60, files: false }, digest: 'ea0d89e0e8996b4701a918c3c6ca2cfc69ddbbcbec836c7e2c4648712f06fba4' },
  {
    name: 'another seed, half with photos, up to 4 attachments',
    options: { members: 90, seed: 7, photo_ratio: 0.5, attachments_per_member: [0, 4], photo_bytes: [8192, 9000], attachment_bytes: [2048, 3000] },
    digest: 'ea072c3f5b16f6bd11681f6c7df5d4264b8fd022be6069d34ac17293a8838816',
  },
];

describe('a generated company answers as it did when every member was made at start', () => {
  for (const { name, options, digest } of CASES) {
    it(name, async () => {
      const emu = await launch({ generate: options, maintenance: false, limits: { updatesPerMinute: 1000 } });
      try {
        // The seed's time: the clock runs from the start, and a loaded machine may take a second to seed.
        const seeded = (await emu.api('GET', '/members')).body.updated_at as string;
        const answers = [...(await readAll(emu, seeded)), ...(await change(emu)), ...(await readAll(emu, seeded))];
        const got = sha256(answers.join('\n'));
        if (process.env.GOLDEN_OUT) (await import('node:fs')).writeFileSync(`${process.env.GOLDEN_OUT}/${name}.txt`, answers.join('\n'));
        expect(got).toBe(digest);
      } finally {
        await emu.close();
      }
    }, 60_000);
  }
});
