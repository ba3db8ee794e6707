/**
 * A file that changes on the service after it was listed (issue 4). A download URL stays tied to
 * the file as it was when listed (api-v2.md 4.4 Members 6), so the change shows when the URLs
 * expire and the lister lists again: the file is then downloaded in its new version, once, and
 * reported as changed; the one re-listing serves every download that met an expired URL.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { randomBytes } from 'node:crypto';
import { addMember, addSheet, b64, companyOf, field, jpeg, setPhoto } from '../helpers/fixtures.js';
import { expectMatchesState, sha256, state, tempDir } from '../helpers/export.js';
import { startRecordingProxy, type RecordingProxy } from '../helpers/recording-proxy.js';
import { runExport } from '../../src/pipelines/export.js';
import type { WdsClient } from '../../src/index.js';

const emu = useEmulator();
const CODES = ['P1', 'P2', 'P3', 'P4', 'P5'];
const CHANGED = 'P5';
let proxy: RecordingProxy;
let client: WdsClient;
let newPhoto: Buffer;
const SHEET = 5;
const FILE_FIELD = 5001;
/** Larger than what the zip sink keeps in memory (1 MiB): it waits in a spool file. */
const BIG = 1_500_000;

/** Gives member P1 a new version of `big.pdf` in the single-record sheet; answers its bytes. */
function replaceBigFile(): Buffer {
  const company = companyOf(emu());
  const data = randomBytes(BIG);
  const records = company.data.sheets[String(SHEET)]!.records;
  const old = records.P1?.[0]?.files[FILE_FIELD];
  records.P1 = [{ values: {}, files: { [FILE_FIELD]: company.storeFile(data, 'big.pdf', old) } }];
  return data;
}

beforeAll(async () => {
  for (const [i, code] of CODES.entries()) {
    addMember(emu(), code);
    setPhoto(emu(), code, await jpeg(160, 120, i + 1));
  }
  newPhoto = await jpeg(200, 150, 99);
  addSheet(emu(), { id: SHEET, name: 'Large files', record_type: 0, fields: [field(FILE_FIELD, 'File', 'attach_file')] });
  replaceBigFile();
  // The replacement gets a later updated_at than the original (one-second resolution).
  await emu().control('POST', '/clock', { advance_seconds: 60 });
  proxy = await startRecordingProxy(emu().url);
  client = clientFor({ ...emu(), url: proxy.url });
});
afterAll(async () => {
  await client?.close();
  await proxy?.close();
});

it('a photo replaced after listing is downloaded once, in its new version, and reported as changed', async () => {
  const before = await state(emu());
  const size = before.members.find((m) => m.code === 'P1')!.photo!.size;
  // About half a second per photo, one at a time: the change lands while P1 is downloading.
  await emu().control('POST', '/faults', { storage: { bandwidth_bytes_per_s: size * 2 } });

  let change: Promise<void> | undefined;
  const replaceThenExpire = async (): Promise<void> => {
    const { status, body } = await emu().api('PATCH', '/members/face_image', {
      enable_trimming: false, member_data: [{ code: CHANGED, base64_face_image: b64(newPhoto) }],
    });
    expect(status).toBe(200);
    expect((await emu().waitTask(body.task_id)).status).toBe('OK');
    // Every URL of the first listing expires.
    await emu().control('POST', '/clock', { advance_seconds: 15 * 60 + 1 });
  };
  const result = await runExport({
    client, what: 'photos', out: join(tempDir(), 'photos'), concurrency: 1,
    // Called once the listing is done, before the first download.
    onProgress: () => void (change ??= replaceThenExpire()),
  });
  await change;
  await emu().control('DELETE', '/faults');

  const after = await state(emu());
  expect(after.members.find((m) => m.code === CHANGED)!.photo!.sha256).toBe(sha256(newPhoto));
  const contents = await expectMatchesState(result.out, after, 'photos');
  expect(contents.manifest).toHaveLength(CODES.length);

  expect(result.changed).toBe(1);
  const item = result.report.items.find((i) => i.code === CHANGED)!;
  expect(item.outcome).toBe('ok');
  expect(item.reason).toMatch(/changed/);
  expect(item.sha256).toBe(sha256(newPhoto));
  expect(result.report.items.filter((i) => i.code !== CHANGED).every((i) => i.outcome === 'ok' && i.reason === undefined)).toBe(true);
  // One re-listing for every download that met an expired URL.
  expect(result.relists).toBe(1);

  // Never twice: storage served the changed photo once, its new version; the old URL was refused.
  const storage = proxy.requests.filter((r) => decodeURIComponent(r.url.split('?')[0]!).endsWith(`/${CHANGED}.jpg`));
  expect(storage.filter((r) => r.status === 200)).toHaveLength(1);
  expect(storage.filter((r) => r.status === 403).length).toBeGreaterThanOrEqual(1);
  expect(proxy.requests.filter((r) => r.url.startsWith('/storage/') && r.status === 200)).toHaveLength(CODES.length);
});

it.each(['folder', 'zip'] as const)('a large file that changes while it downloads to a %s is downloaded again whole, in its new version', async (kind) => {
  // The first attempt is cut halfway; by the time it is retried the file has changed and its URL
  // has expired, so the retry meets a 403, the re-listing shows the new version, and the part
  // already written must be thrown away.
  await emu().control('POST', '/faults', { storage: { path_contains: '/big.pdf', bandwidth_bytes_per_s: 2_000_000, reset_rate: 1, max_faults: 1 } });
  let change: Promise<void> | undefined;
  const changeThenExpire = async (): Promise<void> => {
    await emu().control('POST', '/clock', { advance_seconds: 60 });
    replaceBigFile();
    await emu().control('POST', '/clock', { advance_seconds: 15 * 60 + 1 });
  };
  const out = join(tempDir(), kind === 'zip' ? 'attachments.zip' : 'attachments');
  const result = await runExport({
    client, what: 'attachments', out, sheet: SHEET, concurrency: 1,
    onProgress: () => void (change ??= changeThenExpire()),
  });
  await change;
  await emu().control('DELETE', '/faults');

  const after = await state(emu());
  const contents = await expectMatchesState(out, { ...after, attachments: after.attachments.filter((a) => a.sheet_id === SHEET) }, 'attachments');
  expect(contents.manifest).toHaveLength(1);
  expect(result.changed).toBe(1);
  expect(result.report.problems).toBe(0);
});
