/**
 * Download URLs live 15 minutes (api-v2.md 4.4 Members 6, Sheets 6). With the emulator clock at
 * speed 60 a URL lives 15 real seconds; storage bandwidth is throttled so that the export takes
 * more than two URL lifetimes. Every file still arrives intact, the expired URLs are replaced by
 * re-listing, and the re-list count is reported.
 */
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { afterAll, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { expectMatchesState, expectedFiles, sha256, state, tempDir } from '../helpers/export.js';
import { runExport } from '../../src/pipelines/export.js';
import { UrlLister, attachmentTargets } from '../../src/stages/export/list-urls.js';
import { downloadFile } from '../../src/stages/export/download.js';
import { FolderSink } from '../../src/sinks/folder.js';
import { DEFAULT_RETRY } from '../../src/client/retry.js';
import { Agent } from 'undici';
import type { WdsClient } from '../../src/index.js';

const emu = useEmulator({
  clockSpeed: 60,
  generate: { members: 60, photo_bytes: [8_192, 9_000], attachments_per_member: [1, 2], attachment_bytes: [3_000, 7_500] },
});
let client: WdsClient | undefined;
afterAll(async () => {
  await client?.close();
});

/**
 * Real seconds each export should take: more than two URL lifetimes of 15 real seconds, so that
 * URLs of a re-listing expire too. Small files (a little over a second each) start often enough
 * for the expiries to be met soon after they happen.
 */
const RUN_SECONDS = 34;
const CONCURRENCY = 2;

it('photo and attachment exports outlast several URL lifetimes, re-list, and every file arrives', { timeout: 60_000 }, async () => {
  client = clientFor(emu());
  const before = await state(emu());
  const bytes = (what: 'photos' | 'attachments'): number => [...expectedFiles(before, what).values()].reduce((n, f) => n + f.size, 0);
  // The bandwidth is per connection; the two sets are of about the same size (about 470 KB), and
  // the smaller one sets the pace.
  const smallest = Math.min(bytes('photos'), bytes('attachments'));
  const bandwidth = Math.floor(smallest / CONCURRENCY / RUN_SECONDS);
  await emu().control('POST', '/faults', { storage: { bandwidth_bytes_per_s: bandwidth } });

  const timed = async (what: 'photos' | 'attachments', out: string) => {
    const started = Date.now();
    const result = await runExport({ client: client!, what, out, concurrency: CONCURRENCY });
    return { ...result, ms: Date.now() - started };
  };
  const [photos, attachments] = await Promise.all([
    timed('photos', join(tempDir(), 'photos')),
    timed('attachments', join(tempDir(), 'attachments.zip')),
  ]);
  await emu().control('DELETE', '/faults');

  const after = await state(emu());
  for (const result of [photos, attachments]) {
    const what = result === photos ? 'photos' : 'attachments';
    await expectMatchesState(result.out, after, what);
    expect(result.ms, `${what}: more than two URL lifetimes`).toBeGreaterThan(30_000);
    expect(result.report.problems, what).toBe(0);
    expect(result.relists, what).toBeGreaterThanOrEqual(2);
    expect(result.changed, what).toBe(0);
    console.log(what, result.ms, result.relists);
  }
});

it('a URL carries its deadline on our clock, and one past its deadline is not used: the file is listed again first', async () => {
  client ??= clientFor(emu());
  const lister = new UrlLister(client, [{ id: 'photos', kind: 'photo' }]);
  const listedAt = Date.now();
  const [file] = await lister.listAll();
  // The service clock is elsewhere (2026, and 60 times as fast), but `Expires=` is read against the
  // answer's Date header: 15 minutes from the listing on our clock, less the safety margin.
  const lifetime = file!.deadline - listedAt;
  expect(lifetime).toBeGreaterThan(15 * 60_000 - 60_000);
  expect(lifetime).toBeLessThan(15 * 60_000 - 2_000);

  const stale = { ...file!, deadline: Date.now() - 1 };
  await emu().control('POST', '/stats/reset');
  const dir = tempDir();
  const sink = await FolderSink.create(dir);
  const dispatcher = new Agent({ connections: 1 });
  try {
    const result = await downloadFile({ file: stale, path: 'photos/stale.jpg' }, { dispatcher, lister, sink, retry: DEFAULT_RETRY });
    expect(result.outcome).toBe('ok');
    // The URL used came from a later listing (the same text when both fall in one service second).
    expect(result.file.listedAt).toBeGreaterThan(stale.listedAt);
  } finally {
    await dispatcher.close();
  }
  // The stale URL was never sent: one storage request, with the fresh URL of one re-listing.
  expect((await emu().control('GET', '/stats')).storage_downloads).toBe(1);
  expect(lister.relists).toBe(1);
  const want = (await state(emu())).members.find((m) => m.code === file!.code)!.photo!;
  expect(sha256(await readFile(join(dir, 'photos/stale.jpg')))).toBe(want.sha256);
});

it('a listing asked for again finds each file by key in any order, and says when one is gone', async () => {
  client ??= clientFor(emu());
  const target = (await attachmentTargets(client))[0]!;
  const lister = new UrlLister(client, [target]);
  const files = await lister.listAll();
  const before = Date.now();
  // Downloads ask in about the listing's order; a file asked for out of it is still found.
  const order = [...files.slice(1), files[0]!, ...files.slice(0, 3).reverse()];
  for (const file of order) {
    const fresh = await lister.refresh(target.id, before - 1, file.key);
    expect(fresh, file.key).toMatchObject({ key: file.key, code: file.code, file_name: file.file_name });
    expect(fresh!.listedAt).toBeGreaterThanOrEqual(before);
  }
  expect(await lister.refresh(target.id, before - 1, `${files[0]!.key}-gone`)).toBeUndefined();
  expect(lister.relists).toBe(1);
});
