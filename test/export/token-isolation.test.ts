/**
 * The access token is never sent to storage (issue 4): every request of an export goes through a
 * recording proxy in front of the emulator; the API requests carry the Service-Token, the storage
 * requests carry no credential of any kind.
 */
import { expect, it } from 'vitest';
import { join } from 'node:path';
import { useEmulator } from '../helpers/emulator.js';
import { expectMatchesState, state, tempDir } from '../helpers/export.js';
import { useProxiedClient } from '../helpers/recording-proxy.js';
import { runExport } from '../../src/pipelines/export.js';

const emu = useEmulator({
  generate: { members: 30, photo_bytes: [10_000, 20_000], attachments_per_member: [1, 2], attachment_bytes: [3_000, 10_000] },
});
const proxied = useProxiedClient(emu);

it.each(['photos', 'attachments'] as const)('a %s export sends no token, authorization or cookie to storage', async (what) => {
  proxied().proxy.requests.length = 0;
  const out = join(tempDir(), what);
  await runExport({ client: proxied().client, what, out, concurrency: 4 });
  const contents = await expectMatchesState(out, await state(emu()), what);

  const api = proxied().proxy.requests.filter((r) => r.url.startsWith('/api/'));
  const storage = proxied().proxy.requests.filter((r) => r.url.startsWith('/storage/'));
  // The proxy sees the token where it belongs, so its absence below means something.
  expect(api.filter((r) => !r.url.endsWith('/token')).every((r) => typeof r.headers['service-token'] === 'string')).toBe(true);
  expect(storage.length).toBe(contents.manifest.length);
  for (const r of storage) {
    const names = Object.keys(r.headers).map((h) => h.toLowerCase());
    expect(names, r.url).not.toContain('service-token');
    expect(names, r.url).not.toContain('authorization');
    expect(names, r.url).not.toContain('cookie');
    expect(r.status, r.url).toBe(200);
  }
});
