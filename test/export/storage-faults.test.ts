/**
 * Storage faults (issue 4): with 10 % errors (500/503/504), 5 % connections cut mid-body and 5 %
 * bodies shorter than their Content-Length, every file still arrives intact, to a folder and to a
 * zip: the downloads retry with backoff, check the size, and resume with Range.
 */
import { join } from 'node:path';
import { beforeEach, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { expectMatchesState, state, tempDir } from '../helpers/export.js';
import { useProxiedClient } from '../helpers/recording-proxy.js';
import { runExport } from '../../src/pipelines/export.js';

const emu = useEmulator({
  generate: { members: 120, photo_bytes: [20_000, 60_000], attachments_per_member: [1, 2], attachment_bytes: [5_000, 50_000] },
});
// Through a recording proxy, to see the Range requests of resumed downloads.
const proxied = useProxiedClient(emu);

beforeEach(async () => {
  await emu().control('POST', '/stats/reset');
  proxied().proxy.requests.length = 0;
  await emu().control('POST', '/faults', { storage: { error_rate: 0.1, reset_rate: 0.05, truncate_rate: 0.05, seed: 4242 } });
});

it.each([
  ['photos', 'photos'],
  ['attachments', 'attachments.zip'],
] as const)('every file of a %s export arrives intact despite errors, cuts and truncations', async (what, name) => {
  const out = join(tempDir(), name);
  const result = await runExport({ client: proxied().client, what, out, concurrency: 6, retry: { baseDelayMs: 10, maxDelayMs: 200 } });
  await emu().control('DELETE', '/faults');
  const contents = await expectMatchesState(out, await state(emu()), what);
  expect(result.report.problems).toBe(0);
  expect(result.report.counts.ok).toBe(contents.manifest.length);
  // The faults did happen: more storage requests than files.
  const stats = await emu().control('GET', '/stats');
  expect(stats.storage_downloads).toBeGreaterThan(contents.manifest.length * 1.1);
  // Cut bodies were resumed where they stopped, not downloaded again from the start.
  const resumed = proxied().proxy.requests.filter((r) => r.url.startsWith('/storage/') && r.headers.range !== undefined && r.status === 206);
  expect(resumed.length).toBeGreaterThan(0);
  for (const r of resumed) expect(r.headers['if-range'], 'a resume is guarded by the ETag').toMatch(/^"/);
});
