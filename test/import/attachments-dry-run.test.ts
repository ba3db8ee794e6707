/**
 * `--dry-run` of the attachment import (DESIGN.md section 5; issue 5, Done when): every check runs
 * and every update request is sent with `Dry-Run: 1`, so the service validates it too, and
 * `/_emulator/state` is the same before and after. The report says what a real run would do, and
 * a real run afterwards does exactly that.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { state, tempDir, type EmulatorState } from '../helpers/export.js';
import type { WdsClient } from '../../src/index.js';
import type { AttachmentImportResult } from '../../src/pipelines/attachment-import.js';
import { resetStats, writeFiles } from './photo-helpers.js';
import {
  QUALIFICATIONS, attachmentRequests, factsOf, importAttachments, outcomesUnder, pdf, sentNames, startAttachmentProxy, type AttachmentProxy,
} from './attachment-helpers.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });

let proxy: AttachmentProxy;
let client: WdsClient;
let dir: string;
let before: EmulatorState;
let dry: AttachmentImportResult;

beforeAll(async () => {
  proxy = await startAttachmentProxy(emu().url, { decode: true });
  client = clientFor(emu(), { baseUrl: proxy.url, limits: { update: { limit: 10000, windowMs: 60_000 } } });
  dir = await writeFiles(tempDir('wds-attachments-'), {
    'A0010/aws-certification.pdf': pdf(2000), // update
    'A0020/new-award.pdf': pdf(2100), // register
    'A0005/certificate.pdf': pdf(2200), // held twice: conflict
    'A0001/bad.pdf': Buffer.from('text, not a PDF\n'), // invalid
    'Z0001/x.pdf': pdf(2300), // unknown member
  });
  before = await state(emu());
  await resetStats(emu());
  dry = await importAttachments(client, dir, { ...QUALIFICATIONS, dryRun: true });
});

afterAll(async () => {
  await client?.close();
  await proxy?.close();
});

describe('attachments import --dry-run', () => {
  it('leaves /_emulator/state exactly as it was', async () => {
    expect(await state(emu())).toEqual(before);
  });

  it('sends every update request with Dry-Run: 1, routed as a real run would', async () => {
    expect(proxy.sent.length).toBe(2);
    expect(proxy.sent.every((r) => r.dryRun)).toBe(true);
    expect(sentNames(proxy).sort()).toEqual(['PATCH A0010/aws-certification.pdf', 'POST A0020/new-award.pdf']);
    expect(dry.requests).toEqual({ register: 1, update: 1, minimum: 2, resubmitted: 0 });
    expect(await attachmentRequests(emu())).toEqual({ register: 1, update: 1, rateLimited: 0 });
  });

  it('reports what a real run would do, and a real run then does it', async () => {
    expect(dry.report.command).toBe('attachments import (dry run)');
    const byName = Object.fromEntries(dry.report.items.map((i) => [i.path!.slice(dir.length + 1), i.reason]));
    expect(byName['A0010/aws-certification.pdf']).toBe('dry run: the service would accept it (update)');
    expect(byName['A0020/new-award.pdf']).toBe('dry run: the service would accept it (register)');
    const expected = {
      'A0010/aws-certification.pdf': 'ok', 'A0020/new-award.pdf': 'ok', 'A0005/certificate.pdf': 'conflict', 'A0001/bad.pdf': 'invalid', 'Z0001/x.pdf': 'invalid',
    };
    expect(outcomesUnder(dry, dir)).toEqual(expected);

    const real = await importAttachments(client, dir, QUALIFICATIONS);
    expect(real.report.command).toBe('attachments import');
    expect(outcomesUnder(real, dir)).toEqual(expected);
    expect(real.requests).toEqual(dry.requests);
    expect(proxy.sent.slice(2).every((r) => !r.dryRun)).toBe(true);
    const after = factsOf((await state(emu())).attachments);
    const changed = after.filter((a) => !factsOf(before.attachments).some((b) => JSON.stringify(b) === JSON.stringify(a)));
    expect(changed.map((a) => `${a.code}/${a.file_name}`).sort()).toEqual(['A0010/aws-certification.pdf', 'A0020/new-award.pdf']);
  });
});
