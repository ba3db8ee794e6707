/**
 * Large files are downloaded with fewer connections than small ones: to a folder, ten at once
 * while bodies over 1 MB are coming (LARGE_FILE_CONNECTIONS); to a zip, which takes one entry at a
 * time, eight while files too large to wait in memory are on their way into it. More only held
 * read buffers and competed for the CPU. Small files (photos) keep the full concurrency (16
 * here). An export starts with 16 and opens more as small files are answered slowly (storage
 * latency; latency-window.test covers quick answers). Measured at a
 * recording proxy in front of the emulator: how many storage requests were open when each one
 * came in, after the first burst; and on which connection each came, for the bound on
 * connections and their reuse (one connection per download slot, ConnectionLanes).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useProxiedClient, type RecordedRequest } from '../helpers/recording-proxy.js';
import { expectMatchesState, state, tempDir } from '../helpers/export.js';
import { runExport } from '../../src/pipelines/export.js';

const emu = useEmulator({
  generate: {
    members: 48, photo_ratio: 1, photo_bytes: [20_000, 40_000],
    // Over the zip sink's in-memory limit (1 MB): every attachment goes through a spool file.
    attachments_per_member: [1, 1], attachment_bytes: [1_200_000, 1_600_000],
  },
});
const proxied = useProxiedClient(emu);

/** For each storage request after the first `skip`, how many storage requests were open when it came. */
function openAtStart(requests: RecordedRequest[], skip: number): number[] {
  const storage = requests.filter((r) => r.url.startsWith('/storage/')).sort((a, b) => a.startedAt - b.startedAt);
  return storage.slice(skip).map((r) => storage.filter((o) => o !== r && o.startedAt < r.startedAt && (o.endedAt ?? Infinity) > r.startedAt).length + 1);
}

describe('export pace', () => {
  it.each([['attachments.zip', 8], ['attachments', 10]] as const)('large files to %s: at most %d downloads at once after the first ones, every file there', async (name, most) => {
    const { proxy, client } = proxied();
    // Storage latency keeps each download open long enough to overlap with the others.
    await emu().control('POST', '/faults', { storage: { latency_ms: 15 } });
    const from = proxy.requests.length;
    const out = join(tempDir(), name);
    await runExport({ client, what: 'attachments', out, concurrency: 16 });
    await expectMatchesState(out, await state(emu()), 'attachments');
    const open = openAtStart(proxy.requests.slice(from), 16);
    expect(open.length).toBeGreaterThan(20);
    expect(Math.max(...open)).toBeLessThanOrEqual(most);
  });

  it.each(['photos.zip', 'photos'])('small files to %s: the full concurrency', async (name) => {
    const { proxy, client } = proxied();
    await emu().control('POST', '/faults', { storage: { latency_ms: 15 } });
    const from = proxy.requests.length;
    await runExport({ client, what: 'photos', out: join(tempDir(), name), concurrency: 16 });
    expect(Math.max(...openAtStart(proxy.requests.slice(from), 0))).toBeGreaterThan(10);
  });

  it('an export starts slowly: 16 downloads until small files are answered slowly, then more, up to the concurrency', async () => {
    const { proxy, client } = proxied();
    // Slow enough that, on a loaded machine too, the downloads this process starts overlap at the storage.
    await emu().control('POST', '/faults', { storage: { latency_ms: 150 } });
    let from = proxy.requests.length;
    const attachments = join(tempDir(), 'attachments');
    await runExport({ client, what: 'attachments', out: attachments, concurrency: 64 });
    await expectMatchesState(attachments, await state(emu()), 'attachments');
    // Large files: never more than the first 16 at once, though 64 were allowed.
    expect(Math.max(...openAtStart(proxy.requests.slice(from), 0))).toBeLessThanOrEqual(16);
    // Small files, answered slowly: past 16 once the first answers came, to a folder or a zip.
    for (const name of ['photos', 'photos.zip']) {
      from = proxy.requests.length;
      await runExport({ client, what: 'photos', out: join(tempDir(), name), concurrency: 64 });
      expect(Math.max(...openAtStart(proxy.requests.slice(from), 0)), name).toBeGreaterThan(16);
    }
  });

  it.each([4, 16])('at concurrency %d: as many storage connections at most, each kept open for the next file, one request at a time', async (concurrency) => {
    const { proxy, client } = proxied();
    await emu().control('POST', '/faults', { storage: { latency_ms: 5 } });
    const from = proxy.requests.length;
    const out = join(tempDir(), 'photos');
    await runExport({ client, what: 'photos', out, concurrency });
    await expectMatchesState(out, await state(emu()), 'photos');
    const storage = proxy.requests.slice(from).filter((r) => r.url.startsWith('/storage/'));
    const byConnection = new Map<number, RecordedRequest[]>();
    for (const r of storage) byConnection.set(r.connection, [...(byConnection.get(r.connection) ?? []), r]);
    expect(byConnection.size).toBeLessThanOrEqual(concurrency);
    expect(storage.length).toBe(48);
    // Kept alive: fewer connections than files, and (48 photos) some carried several.
    expect(Math.max(...[...byConnection.values()].map((requests) => requests.length))).toBeGreaterThan(2);
    for (const requests of byConnection.values()) {
      const inOrder = requests.sort((a, b) => a.startedAt - b.startedAt);
      // No pipelining: a request comes on a connection only after the answer before it was sent.
      for (let i = 1; i < inOrder.length; i++) expect(inOrder[i]!.startedAt).toBeGreaterThanOrEqual(inOrder[i - 1]!.endedAt!);
    }
  });
});
