/**
 * When the service ends a task NG for a file our checks passed (DESIGN.md section 5), the message
 * is attached to that file alone, in the service's words; an NG task changes nothing, so the rest
 * of its request is sent once more and goes in. Made here in the emulator from the progress hook
 * after a first batch, between our listing and the request: someone uploads a file of the same
 * name for a member we register a file for, or a second record of a name we replace. A file of
 * the same member whose name is part of the refused name ("3.pdf" in "new-3.pdf") is not blamed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import type { WdsClient } from '../../src/index.js';
import { itemFor, resetStats, sha256, writeFiles } from './photo-helpers.js';
import { QUALIFICATIONS, addRecordWithFile, attachmentRequests, importAttachments, outcomesUnder, pdf, recordsOf } from './attachment-helpers.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });

let client: WdsClient;

beforeAll(() => {
  client = clientFor(emu(), { limits: { update: { limit: 10000, windowMs: 60_000 } } });
});

afterAll(async () => {
  await client?.close();
});

describe('NG attribution', () => {
  it('a name uploaded by someone else after the listing: that file failed with the service message, the rest of its batch goes in', async () => {
    const q = `attachments/${QUALIFICATIONS.sheet}/${QUALIFICATIONS.field}`;
    const files = {
      // Sheet 1 comes first: its request is the first batch.
      'attachments/1/1204/A0017/contract.pdf': pdf(2000),
      [`${q}/A0001/3.pdf`]: pdf(2100),
      [`${q}/A0001/new-3.pdf`]: pdf(2200),
      [`${q}/A0002/x.pdf`]: pdf(2300),
      [`${q}/A0004/y.pdf`]: pdf(2400),
      [`${q}/A0006/z.pdf`]: pdf(2500),
    };
    const dir = await writeFiles(tempDir('wds-attachments-'), files);
    const theirs = pdf(2600);
    await resetStats(emu());
    // Progress may be told more than once while one request is done: the upload happens once.
    let uploaded = false;
    const result = await importAttachments(client, dir, {
      onProgress: (p) => {
        if (p.stage === 'send' && p.done === 1 && !uploaded) {
          uploaded = true;
          addRecordWithFile(emu(), QUALIFICATIONS, 'A0001', 'new-3.pdf', theirs);
        }
      },
    });

    const failed = itemFor(result, 'A0001/new-3.pdf');
    expect(failed.outcome).toBe('failed');
    expect(failed.reason).toBe(
      'member A0001: file "new-3.pdf": the member already holds a file with this name in this field; file names must not repeat (use partial update to replace it)',
    );
    expect(outcomesUnder(result, dir)).toEqual(Object.fromEntries(Object.keys(files).map((p) => [p, p.endsWith('new-3.pdf') ? 'failed' : 'ok'])));
    // Batch 1 (sheet 1), batch 2 (NG), batch 2 again without new-3.pdf.
    expect(result.requests).toEqual({ register: 3, update: 0, minimum: 2, resubmitted: 4 });
    expect(await attachmentRequests(emu())).toEqual({ register: 3, update: 0, rateLimited: 0 });
    expect((await recordsOf(emu(), QUALIFICATIONS, 'A0001')).map((r) => [r.file_name, r.sha256])).toEqual([
      ['new-3.pdf', sha256(theirs)],
      ['3.pdf', sha256(files[`${q}/A0001/3.pdf`]!)],
    ]);
    for (const code of ['A0002', 'A0004', 'A0006']) expect((await recordsOf(emu(), QUALIFICATIONS, code)).length, code).toBeGreaterThan(0);
  });

  it('a second record of a replaced name added after the listing: that file failed, the other replacements go in', async () => {
    const files = {
      'A0019/new.pdf': pdf(1000),
      'A0010/aws-certification.pdf': pdf(1100),
      'A0011/pmp.pdf': pdf(1200),
      'A0014/pmp-certificate.pdf': pdf(1300),
      'A0016/boki1.pdf': pdf(1400),
    };
    const dir = await writeFiles(tempDir('wds-attachments-'), files);
    const pmp = await recordsOf(emu(), QUALIFICATIONS, 'A0011');
    await resetStats(emu());
    let added = false;
    const result = await importAttachments(client, dir, {
      ...QUALIFICATIONS,
      onProgress: (p) => {
        // Register goes before update: after it, A0011 gets a second pmp.pdf (once, however often
        // progress is told while one request is done).
        if (p.stage === 'send' && p.done === 1 && !added) {
          added = true;
          addRecordWithFile(emu(), QUALIFICATIONS, 'A0011', 'pmp.pdf', pdf(1500));
        }
      },
    });
    const failed = itemFor(result, 'A0011/pmp.pdf');
    expect(failed.outcome).toBe('failed');
    expect(failed.reason).toBe('member A0011: file "pmp.pdf": the member holds 2 records with this file name; partial update cannot choose one');
    expect(result.report.counts).toMatchObject({ ok: 4, failed: 1, invalid: 0, conflict: 0 });
    expect(result.requests).toEqual({ register: 1, update: 2, minimum: 2, resubmitted: 3 });
    expect(await attachmentRequests(emu())).toEqual({ register: 1, update: 2, rateLimited: 0 });
    expect((await recordsOf(emu(), QUALIFICATIONS, 'A0011')).slice(0, 2)).toEqual(pmp);
    for (const name of ['A0010/aws-certification.pdf', 'A0014/pmp-certificate.pdf', 'A0016/boki1.pdf']) {
      const [code, fileName] = name.split('/') as [string, string];
      const record = (await recordsOf(emu(), QUALIFICATIONS, code)).find((r) => r.file_name === fileName);
      expect(record?.sha256, name).toBe(sha256(files[name as keyof typeof files]));
    }
  });
});
