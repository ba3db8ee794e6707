/**
 * The rerun of a zip export keeps what a stopped run left in `<name>.partial` (DESIGN.md section
 * 8): it copies those entries, each checked, and downloads only the rest. The earlier `.partial`
 * is not lost before the new zip is complete (a rerun stopped again, or killed with SIGKILL); an
 * entry whose bytes are damaged, or whose file changed on the service since, is downloaded again;
 * a `.partial` without its central directory is not trusted. A rerun into a complete export zip
 * copies from it in the same way, and leaves it as it was until its own zip replaces it.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { open, readFile, readdir, stat, truncate } from 'node:fs/promises';
import { basename, join } from 'node:path';
import yauzl from 'yauzl';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { expectMatchesState, expectedFiles, readZipExport, state, tempDir } from '../helpers/export.js';
import { connectionArgs, finished, spawnCli } from '../helpers/cli-process.js';
import { addMember, addSheet, companyOf, field, jpeg, setPhoto } from '../helpers/fixtures.js';
import { deleteMember } from '../archive/helpers.js';
import { runExport } from '../../src/pipelines/export.js';
import { verifyExport } from '../../src/pipelines/verify.js';

const emu = useEmulator({ generate: { members: 120, photo_bytes: [10_000, 20_000], attachments_per_member: [0, 0] } });
const client = useClient(emu);
const CONCURRENCY = 4;

/** Photos, and attachments: text files of one sheet, deflated in the zip. */
const totals = { photos: 0, attachments: 0 };
let total = 0;
beforeAll(async () => {
  addSheet(emu(), { id: 900, name: 'Notes', record_type: 0, fields: [field(9001, 'Notes', 'attach_file')] });
  const company = companyOf(emu());
  const records = company.data.sheets['900']!.records;
  for (let i = 1; i <= 40; i += 1) {
    const code = `G${String(i).padStart(6, '0')}`;
    records[code] = [{ values: {}, files: { 9001: company.storeFile(Buffer.from(`${code},note\n`.repeat(200 + i)), `${code}.csv`) } }];
  }
  const s = await state(emu());
  totals.photos = expectedFiles(s, 'photos').size;
  totals.attachments = expectedFiles(s, 'attachments').size;
  total = totals.photos;
});
beforeEach(async () => {
  await emu().control('DELETE', '/faults');
});

const storageDownloads = async (): Promise<number> => (await emu().control('GET', '/stats')).storage_downloads as number;
const slowStorage = (): Promise<unknown> => emu().control('POST', '/faults', { storage: { latency_ms: 20 } });

/** Runs the export until `files` more have been downloaded, then stops it as SIGINT would. */
async function stopAfter(out: string, files: number, what: 'photos' | 'attachments' = 'photos'): Promise<{ skipped: number; present: Map<string, string> }> {
  await slowStorage();
  const stop = new AbortController();
  const result = await runExport({
    client: client(), what, out, concurrency: CONCURRENCY, signal: stop.signal,
    onProgress: (p) => {
      if (p.done >= files) stop.abort('SIGINT');
    },
  });
  await emu().control('DELETE', '/faults');
  expect(existsSync(`${out}.partial.prev`)).toBe(false);
  expect(existsSync(`${out}.partial.d`)).toBe(false);
  const contents = await readZipExport(`${out}.partial`);
  expect(contents.manifest.map((l) => l.path).sort()).toEqual([...contents.files.keys()].sort());
  // The files not in the .partial are in the report too, as not reached.
  const unreached = totals[what] - contents.files.size;
  expect(result.report.interrupted).toEqual({ signal: 'SIGINT', total: totals[what], unreached });
  expect(result.report.items).toHaveLength(totals[what]);
  return { skipped: result.report.counts.skipped - unreached, present: new Map([...contents.files].map(([path, f]) => [path, f.sha256])) };
}

/** Runs the export to its end: it succeeds, and asks storage only for `downloads` files. */
async function complete(out: string, downloads: number, what: 'photos' | 'attachments' = 'photos'): Promise<void> {
  const before = await storageDownloads();
  const result = await runExport({ client: client(), what, out, concurrency: CONCURRENCY });
  expect(result.report.interrupted).toBeNull();
  expect(result.report.counts).toMatchObject({ ok: downloads, failed: 0 });
  expect(await storageDownloads() - before).toBe(downloads);
  // Nothing but the zip (a lock a killed CLI left is the CLI's to take over).
  expect((await readdir(join(out, '..'))).filter((name) => !name.endsWith('.lock'))).toEqual([basename(out)]);
  await expectMatchesState(out, await state(emu()), what);
}

/** Where the bytes of `name` start in the zip `file`. */
function dataOffset(file: string, name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true }, (error, zip) => {
      if (error || !zip) return reject(error);
      zip.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName !== name) return zip.readEntry();
        zip.close();
        void readFile(file).then((data) => {
          const at = entry.relativeOffsetOfLocalHeader;
          resolve(at + 30 + data.readUInt16LE(at + 26) + data.readUInt16LE(at + 28));
        }, reject);
      });
      zip.on('end', () => reject(new Error(`${name} is not in ${file}`)));
      zip.readEntry();
    });
  });
}

describe('the rerun of a stopped zip export', () => {
  it('keeps the entries of a rerun that was stopped again, and the last run fetches only the rest', { timeout: 60_000 }, async () => {
    const out = join(tempDir(), 'photos.zip');
    const first = await stopAfter(out, 15);
    const second = await stopAfter(out, 15);
    expect(second.skipped).toBe(first.present.size);
    expect(second.present.size).toBeGreaterThanOrEqual(first.present.size + 15);
    for (const [path, sha] of first.present) expect(second.present.get(path), path).toBe(sha);
    await complete(out, total - second.present.size);
  });

  it('killed with SIGKILL while it ran, loses nothing the first run fetched', { timeout: 60_000 }, async () => {
    const out = join(tempDir(), 'photos.zip');
    const first = await stopAfter(out, 20);
    await slowStorage();
    const before = await storageDownloads();
    const child = spawnCli(['photos', 'export', '--out', out, '--concurrency', String(CONCURRENCY), ...connectionArgs(emu())]);
    const run = finished(child);
    while ((await storageDownloads()) - before < 10) await new Promise((r) => setTimeout(r, 10));
    child.kill('SIGKILL');
    expect((await run).signal).toBe('SIGKILL');
    await emu().control('DELETE', '/faults');
    // The first run's zip waits beside the half-written one.
    expect(existsSync(`${out}.partial.prev`)).toBe(true);
    await complete(out, total - first.present.size);
  });

  it('downloads again an entry whose bytes were damaged, and keeps the others', { timeout: 60_000 }, async () => {
    const out = join(tempDir(), 'photos.zip');
    const first = await stopAfter(out, 20);
    const damaged = [...first.present.keys()][3]!;
    const handle = await open(`${out}.partial`, 'r+');
    try {
      const at = (await dataOffset(`${out}.partial`, damaged)) + 100;
      const byte = Buffer.alloc(1);
      await handle.read(byte, 0, 1, at);
      await handle.write(Buffer.from([byte[0]! ^ 0xff]), 0, 1, at);
    } finally {
      await handle.close();
    }
    await complete(out, total - first.present.size + 1);
  });

  it('downloads again an entry whose file changed on the service since', { timeout: 60_000 }, async () => {
    const out = join(tempDir(), 'photos.zip');
    const first = await stopAfter(out, 20);
    const changed = [...first.present.keys()][5]!;
    await emu().control('POST', '/clock', { advance_seconds: 60 });
    setPhoto(emu(), changed.slice('photos/'.length, -'.jpg'.length), await jpeg(120, 90, 7));
    await complete(out, total - first.present.size + 1);
  });

  it('carries deflated entries over as well (text attachments)', { timeout: 60_000 }, async () => {
    const out = join(tempDir(), 'attachments.zip');
    const first = await stopAfter(out, 10, 'attachments');
    expect(first.present.size).toBeGreaterThanOrEqual(10);
    await complete(out, totals.attachments - first.present.size, 'attachments');
    const zip = await readZipExport(out);
    for (const [path, entry] of zip.files) expect(entry.compressionMethod, path).toBe(8);
  });

  it('starts over from a .partial without its central directory', { timeout: 60_000 }, async () => {
    const out = join(tempDir(), 'photos.zip');
    await stopAfter(out, 20);
    await truncate(`${out}.partial`, Math.floor((await stat(`${out}.partial`)).size / 2));
    await complete(out, total);
  });
});

describe('the rerun of a complete zip export', () => {
  const fileHash = async (path: string): Promise<string> => createHash('sha256').update(await readFile(path)).digest('hex');

  it('copies the entries the zip still holds and downloads only the changed file; a stop leaves the zip as it was', { timeout: 60_000 }, async () => {
    const out = join(tempDir(), 'photos.zip');
    await complete(out, total);
    const changed = [...(await readZipExport(out)).files.keys()].find((path) => path.startsWith('photos/'))!;
    await emu().control('POST', '/clock', { advance_seconds: 60 });
    setPhoto(emu(), changed.slice('photos/'.length, -'.jpg'.length), await jpeg(120, 90, 8));
    const before = await fileHash(out);

    // Stopped while the changed file downloads, every other entry copied already.
    await emu().control('POST', '/faults', { storage: { latency_ms: 2_000 } });
    const stop = new AbortController();
    const stopped = await runExport({
      client: client(), what: 'photos', out, concurrency: CONCURRENCY, signal: stop.signal,
      onProgress: (p) => {
        if (p.skipped === total - 1) stop.abort('SIGINT');
      },
    });
    await emu().control('DELETE', '/faults');
    // The changed photo, cut off by the stop, is reported as not reached.
    expect(stopped.report.interrupted).toEqual({ signal: 'SIGINT', total, unreached: 1 });
    expect(stopped.report.items.filter((i) => i.reason?.startsWith('not downloaded: the run was stopped (SIGINT)')).map((i) => i.key)).toEqual([`photo:${changed.slice('photos/'.length, -'.jpg'.length)}`]);
    expect(await fileHash(out)).toBe(before);
    expect(existsSync(`${out}.partial`)).toBe(true);

    // The next run continues the stopped one's .partial: one download, the rest carried over, and
    // the zip then holds the service's files, the changed photo's new bytes among them.
    await complete(out, 1);
  });

  it('downloads again an entry whose bytes were damaged in the zip, and copies the others', { timeout: 60_000 }, async () => {
    const out = join(tempDir(), 'photos.zip');
    await complete(out, total);
    const damaged = [...(await readZipExport(out)).files.keys()][7]!;
    const handle = await open(out, 'r+');
    try {
      const at = (await dataOffset(out, damaged)) + 100;
      const byte = Buffer.alloc(1);
      await handle.read(byte, 0, 1, at);
      await handle.write(Buffer.from([byte[0]! ^ 0xff]), 0, 1, at);
    } finally {
      await handle.close();
    }
    await complete(out, 1);
  });

  it('keeps the old version of a changed file whose new download fails, and the next run replaces it', { timeout: 60_000 }, async () => {
    const out = join(tempDir(), 'photos.zip');
    await complete(out, total);
    const held = await readZipExport(out);
    const path = [...held.files.keys()].find((p) => p.startsWith('photos/'))!;
    const code = path.slice('photos/'.length, -'.jpg'.length);
    const old = held.files.get(path)!.sha256;
    await emu().control('POST', '/clock', { advance_seconds: 60 });
    setPhoto(emu(), code, await jpeg(100, 80, 11));
    await emu().control('POST', '/faults', { storage: { error_rate: 1, path_contains: code } });
    const failed = await runExport({ client: client(), what: 'photos', out, concurrency: CONCURRENCY, retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 20 } });
    await emu().control('DELETE', '/faults');
    expect(failed.report.counts).toMatchObject({ ok: 0, failed: 1, skipped: total - 1 });
    const after = await readZipExport(out);
    expect(after.files.get(path)?.sha256).toBe(old);
    expect(after.manifest.find((line) => line.path === path)?.sha256).toBe(old);
    expect((await verifyExport(out)).problems).toEqual([]);
    await complete(out, 1);
  });

  it('keeps what the service lists no more, as a folder does: a deleted member\'s photo, and every file a --since rerun leaves out', { timeout: 60_000 }, async () => {
    const out = join(tempDir(), 'photos.zip');
    addMember(emu(), 'Z000001');
    setPhoto(emu(), 'Z000001', await jpeg(80, 60, 5));
    await runExport({ client: client(), what: 'photos', out, concurrency: CONCURRENCY });
    const held = await readZipExport(out);
    expect(held.manifest.some((line) => line.code === 'Z000001')).toBe(true);
    const contents = async (): Promise<unknown> => {
      const now = await readZipExport(out);
      return { manifest: [...now.manifest].sort((a, b) => a.path.localeCompare(b.path)), files: [...now.files].sort() };
    };
    const expected = { manifest: [...held.manifest].sort((a, b) => a.path.localeCompare(b.path)), files: [...held.files].sort() };
    await deleteMember(emu(), 'Z000001');

    // A rerun that lists nothing (`since` after every file) downloads nothing and drops nothing.
    const before = await storageDownloads();
    const since = await runExport({ client: client(), what: 'photos', out, since: '2099-01-01', concurrency: CONCURRENCY });
    expect(since.report.counts).toMatchObject({ ok: 0, failed: 0 });
    expect(await contents()).toEqual(expected);
    // A full rerun copies every entry and keeps the deleted member's photo.
    const full = await runExport({ client: client(), what: 'photos', out, concurrency: CONCURRENCY });
    expect(full.report.counts).toMatchObject({ ok: 0, skipped: total, failed: 0 });
    expect(await storageDownloads() - before).toBe(0);
    expect(await contents()).toEqual(expected);
    expect((await verifyExport(out)).problems).toEqual([]);
  });
});
