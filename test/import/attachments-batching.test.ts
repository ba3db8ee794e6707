/**
 * Batching of the attachment import (api-v2.md 4.4 Sheets 9 and 8: at most 1,000 files and 250 MB
 * of body per request; DESIGN.md section 5): 2,500 small files for one file part go in 3 requests
 * of 1,000, 1,000 and 500; files whose base64 bodies pass 250 MB are split by bytes into the fewest
 * requests their sizes allow, each body at most 250 MB, also when large files bunch together so
 * that taking files in source order would need one request more (only each member's records keep
 * their order). Bodies are measured by a proxy as they stream by, requests counted by the emulator.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import type { WdsClient } from '../../src/index.js';
import { MAX_REQUEST_BYTES, base64Length } from '../../src/spec/limits.js';
import { resetStats, sha256, writeFiles } from './photo-helpers.js';
import {
  QUALIFICATIONS, attachmentFacts, attachmentRequests, importAttachments, pdf, startAttachmentProxy, type AttachmentProxy,
} from './attachment-helpers.js';

const MEMBERS = 70;
const emu = useEmulator({ generate: { members: MEMBERS, files: false }, limits: { updatesPerMinute: 10000 } });
const code = (n: number): string => `G${String(n).padStart(6, '0')}`;

let proxy: AttachmentProxy;
let client: WdsClient;

beforeAll(async () => {
  // Bodies of 250 MB are measured, not decoded; the small files' test turns decoding on.
  proxy = await startAttachmentProxy(emu().url);
  client = clientFor(emu(), { baseUrl: proxy.url, limits: { update: { limit: 10000, windowMs: 60_000 } } });
});

afterAll(async () => {
  await client?.close();
  await proxy?.close();
});

describe('requests filled to their limits', () => {
  it('2,500 small files for one field: 3 requests of 1,000, 1,000 and 500 files', async () => {
    const files: Record<string, string> = {};
    // 50 members with 50 files each, names that sort in the order written.
    for (let m = 1; m <= 50; m += 1) {
      for (let f = 1; f <= 50; f += 1) files[`${code(m)}/scores-${String(f).padStart(2, '0')}.csv`] = `member,file\n${code(m)},${f}\n`;
    }
    const dir = await writeFiles(tempDir('wds-attachments-'), files);
    const from = proxy.sent.length;
    await resetStats(emu());
    proxy.decode = true;
    const result = await importAttachments(client, dir, QUALIFICATIONS);
    proxy.decode = false;
    expect(result.report.counts.ok).toBe(2500);
    expect(result.report.problems).toBe(0);
    expect(result.requests).toEqual({ register: 3, update: 0, minimum: 3, resubmitted: 0 });
    expect(await attachmentRequests(emu())).toEqual({ register: 3, update: 0, rateLimited: 0 });

    const sent = proxy.sent.slice(from);
    expect(sent.map((r) => [r.method, r.files!.length])).toEqual([['POST', 1000], ['POST', 1000], ['POST', 500]]);
    // In source order across the requests: the first holds G000001 to G000020, the last G000031 to G000050.
    expect(sent[0]!.files![0]).toMatchObject({ code: code(1), file_name: 'scores-01.csv' });
    expect(sent[2]!.files!.at(-1)).toMatchObject({ code: code(50), file_name: 'scores-50.csv' });
    // Every file is in the state, each member's in the order of the source.
    const facts = (await attachmentFacts(emu())).filter((a) => a.sheet_id === QUALIFICATIONS.sheet);
    expect(facts).toHaveLength(2500);
    for (const m of [1, 20, 50]) {
      const mine = facts.filter((a) => a.code === code(m));
      expect(mine.map((a) => a.file_name)).toEqual(Array.from({ length: 50 }, (_, i) => `scores-${String(i + 1).padStart(2, '0')}.csv`));
      expect(mine[7]!.sha256).toBe(sha256(Buffer.from(files[`${code(m)}/scores-08.csv`]!)));
    }
    await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it('files whose bodies pass 250 MB: split by bytes into the fewest requests, each at most 250 MB', async () => {
    const SCANS = 45;
    const SIZE = Math.round(4.9 * 1024 * 1024);
    const dir = tempDir('wds-attachments-big-');
    const scans = new Map<string, string>();
    for (let n = 1; n <= SCANS; n += 1) {
      const data = pdf(SIZE);
      scans.set(code(n), sha256(data));
      await writeFiles(dir, { [`scans/${code(n)}/scan.pdf`]: data });
    }
    // After the scans, 1,000 small files of 20 other members: the count limit binds as well.
    const small: Record<string, string> = {};
    for (let m = 46; m <= 65; m += 1) {
      for (let f = 1; f <= 50; f += 1) small[`small/${code(m)}/notes-${String(f).padStart(2, '0')}.csv`] = `${code(m)},${f}\n`;
    }
    await writeFiles(dir, small);
    const paths = [...[...scans.keys()].map((c) => `scans/${c}/scan.pdf`), ...Object.keys(small)];
    const sizeOf = (path: string): number => (path.startsWith('scans/') ? SIZE : Buffer.byteLength(small[path]!));

    // Bytes of body per file as the wire format has it (wire-format.md, Attachments), one member
    // element per file, and a comma between files.
    const itemBytes = (path: string): number => {
      const [, member, name] = path.split('/') as [string, string, string];
      return Buffer.byteLength(JSON.stringify({ code: member, records: [{ file_name: name, base64_content: '' }] })) + base64Length(sizeOf(path));
    };
    const envelope = Buffer.byteLength('{"member_data":[]}');
    const bodyOf = (list: string[]): number => envelope + list.reduce((n, p) => n + itemBytes(p), 0) + list.length - 1;
    const atLeast = (list: string[]): number =>
      Math.max(Math.ceil(list.length / 1000), Math.ceil((bodyOf(list) - envelope + 1) / (MAX_REQUEST_BYTES - envelope)));
    /** Requests when each takes files in source order until the next would not fit. */
    const inOrder = (list: string[]): number => {
      let requests = 0;
      let current: string[] = [];
      for (const path of list) {
        if (current.length && (current.length === 1000 || bodyOf([...current, path]) > MAX_REQUEST_BYTES)) {
          requests += 1;
          current = [];
        }
        current.push(path);
      }
      return requests + (current.length ? 1 : 0);
    };

    // Scans and small files to the qualifications: in source order 3 requests would be needed
    // (scans fill the first by bytes, the small files pass 1,000 in the second); members packed
    // across requests need only the 2 that the limits demand.
    expect([atLeast(paths), inOrder(paths)]).toEqual([2, 3]);
    const from = proxy.sent.length;
    await resetStats(emu());
    const mixed = await importAttachments(client, dir, QUALIFICATIONS);
    await rm(dir, { recursive: true, force: true });
    expect(mixed.report.counts.ok).toBe(paths.length);
    expect(mixed.requests).toEqual({ register: 2, update: 0, minimum: 2, resubmitted: 0 });
    expect(await attachmentRequests(emu())).toEqual({ register: 2, update: 0, rateLimited: 0 });
    const sizes = proxy.sent.slice(from).map((r) => r.bodyBytes);
    expect(sizes).toHaveLength(2);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(MAX_REQUEST_BYTES);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(bodyOf(paths) + envelope - 1);

    const facts = await attachmentFacts(emu());
    const got = facts.filter((a) => a.sheet_id === QUALIFICATIONS.sheet && a.file_name === 'scan.pdf');
    expect(new Map(got.map((a) => [a.code, a.sha256]))).toEqual(scans);
    // Each member's records in the order of the source, though members were packed out of order.
    for (const m of [46, 55, 65]) {
      const mine = facts.filter((a) => a.sheet_id === QUALIFICATIONS.sheet && a.code === code(m) && a.file_name.startsWith('notes-'));
      expect(mine.map((a) => a.file_name)).toEqual(Array.from({ length: 50 }, (_, i) => `notes-${String(i + 1).padStart(2, '0')}.csv`));
    }
  }, 300_000);
});
