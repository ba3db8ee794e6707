/**
 * Imports stream (issue 15, item 1): the names come first, so two files for one member and a
 * code no member has are found without reading either file; the first request leaves as soon as
 * its batch is checked, while later files are still unread; and a file refused at its check simply
 * leaves its batch, so the requests stay the fewest. The source is a real folder, seen through a
 * wrapper that notes when each file is read (its checker reads the bytes it is handed, as for a
 * zip's entries).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import { openSource } from '../../src/sources/open-source.js';
import type { ImportSource, SourceEntry } from '../../src/sources/source.js';
import type { ImportProgress, WdsClient } from '../../src/index.js';
import { runPhotoImport } from '../../src/pipelines/photo-import.js';
import { runAttachmentImport } from '../../src/pipelines/attachment-import.js';
import { photoHashes, photoRequests, plain, resetStats, sha256, writeFiles } from './photo-helpers.js';
import { attachmentRequests, exe, QUALIFICATIONS } from './attachment-helpers.js';

const emu = useEmulator({ generate: { members: 400, files: false }, clockSpeed: 60 });
const code = (n: number): string => `G${String(n).padStart(6, '0')}`;

let client: WdsClient;
beforeAll(() => {
  // The client's update window is one emulator minute; every other limit is the service's.
  client = clientFor(emu(), { limits: { update: { limit: 5, windowMs: 1000 } } });
});
afterAll(async () => {
  await client?.close();
});

/** The source, with each file's first read noted (name and time); files are read through the source, not by path. */
async function watched(path: string): Promise<{ source: ImportSource; reads: Map<string, number> }> {
  const inner = await openSource(path);
  const reads = new Map<string, number>();
  const note = (name: string): void => void (reads.has(name) || reads.set(name, Date.now()));
  const source: ImportSource = {
    label: inner.label,
    close: () => inner.close(),
    async *entries(): AsyncGenerator<SourceEntry> {
      for await (const entry of inner.entries()) {
        if (entry.kind === 'refused') {
          yield entry;
          continue;
        }
        const file = entry.file;
        yield {
          kind: 'file',
          file: {
            where: file.where, relPath: file.relPath, fileName: file.fileName, size: file.size, code: file.code,
            read: (max, into) => (note(file.relPath), file.read(max, into)),
            open: () => (note(file.relPath), file.open()),
          },
        };
      }
    },
  };
  return { source, reads };
}

describe('imports stream', () => {
  it('photos: duplicates and unknown members are never read; the first request leaves while later photos are unread', async () => {
    const images = await Promise.all([1, 2, 3, 4, 5].map((seed) => plain(40, 40, seed).jpeg().toBuffer()));
    const files: Record<string, Buffer> = {};
    for (let n = 1; n <= 250; n += 1) files[`${code(n)}.jpg`] = images[n % images.length]!;
    // Two files for G000001, and a code no member has.
    files[`more/${code(1)}.png`] = await plain(40, 40, 9).png().toBuffer();
    files['Z999999.jpg'] = images[0]!;
    const dir = await writeFiles(tempDir('wds-stream-'), files);
    const { source, reads } = await watched(dir);
    await resetStats(emu());
    let firstSend: { at: number; checked: number; read: number } | undefined;
    const result = await runPhotoImport({
      client, source, trimming: false,
      onProgress: (p: ImportProgress) => {
        if (p.stage === 'send' && !firstSend) firstSend = { at: Date.now(), checked: p.checked!, read: reads.size };
      },
    });

    expect(result.report.counts).toMatchObject({ ok: 249, invalid: 1, conflict: 2, failed: 0 });
    for (const name of [`${code(1)}.jpg`, `more/${code(1)}.png`, 'Z999999.jpg']) expect(reads.has(name), name).toBe(false);
    // 249 photos: 3 requests, the fewest.
    expect(result.requests).toEqual({ register: 3, update: 0, minimum: 3, resubmitted: 0 });
    expect(await photoRequests(emu())).toEqual({ register: 3, update: 0, rateLimited: 0 });
    // The first request left once its photos were checked, before the last photo was read: 49 of
    // them, as the run's first request is its smallest (49, 100, 100).
    expect(firstSend).toBeDefined();
    expect(firstSend!.checked).toBeGreaterThanOrEqual(49);
    expect(firstSend!.checked).toBeLessThan(249);
    expect(firstSend!.read).toBeLessThan(249);
    expect(firstSend!.at).toBeLessThan(Math.max(...reads.values()));
    expect(result.firstRequestMs).not.toBeNull();
    const held = await photoHashes(emu());
    for (let n = 2; n <= 250; n += 1) expect(held.get(code(n)), code(n)).toBe(sha256(files[`${code(n)}.jpg`]!));
    expect(held.get(code(1))).toBeNull();
  }, 60_000);

  it('attachments: a file refused at its check leaves its batch, and the requests stay the fewest', async () => {
    const files: Record<string, Buffer | string> = {};
    // 2,001 files for 200 members, one of them a program named .csv: 2,000 go, in 2 requests.
    for (let m = 1; m <= 200; m += 1) {
      for (let f = 1; f <= 10; f += 1) files[`${code(m)}/notes-${String(f).padStart(2, '0')}.csv`] = `${code(m)},${f}\n`;
    }
    files[`${code(100)}/tool.csv`] = exe();
    const dir = await writeFiles(tempDir('wds-stream-att-'), files);
    const { source, reads } = await watched(dir);
    await resetStats(emu());
    let firstSend: { checked: number; read: number } | undefined;
    const result = await runAttachmentImport({
      client, source, sheet: QUALIFICATIONS.sheet, field: QUALIFICATIONS.field,
      onProgress: (p) => {
        if (p.stage === 'send' && !firstSend) firstSend = { checked: p.checked!, read: reads.size };
      },
    });
    expect(result.report.counts).toMatchObject({ ok: 2000, invalid: 1, failed: 0 });
    expect(result.report.items.find((i) => i.file_name === 'tool.csv')).toMatchObject({ outcome: 'invalid', reason: expect.stringContaining('the name says .csv') });
    expect(result.requests).toEqual({ register: 2, update: 0, minimum: 2, resubmitted: 0 });
    expect(await attachmentRequests(emu())).toEqual({ register: 2, update: 0, rateLimited: 0 });
    // The first request left before the second batch's files were all read.
    expect(firstSend!.checked).toBeGreaterThanOrEqual(1000);
    expect(firstSend!.read).toBeLessThan(2001);
  }, 60_000);
});
