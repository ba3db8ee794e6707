/**
 * The sample company's attachments, exported and imported back into the same company (issue 17).
 * Three members each hold two qualification records with a file named `certificate.pdf`: the
 * service cannot replace one of them, nor take the name again. The import finds that the service
 * already holds exactly those bytes, so it sends nothing for them and reports no conflict; a file
 * of that name with other bytes is still a conflict.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import { runExport } from '../../src/pipelines/export.js';
import { attachmentFacts, attachmentRequests, importAttachments, pdf, QUALIFICATIONS } from './attachment-helpers.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10_000 } });
const api = useClient(emu, { limits: { update: { limit: 10_000, windowMs: 60_000 } } });

const REPEATED = ['A0005', 'A0008', 'A0022'];

describe('the sample export imported back into the sample company', () => {
  it.each(['folder', 'zip'] as const)('from a %s: no conflict; the repeated names are skipped as already held, the rest replaced', async (kind) => {
    await emu().control('POST', '/reset');
    const before = await attachmentFacts(emu());
    const out = join(tempDir('wds-sample-trip-'), kind === 'zip' ? 'attachments.zip' : 'attachments');
    const exported = await runExport({ client: api(), what: 'attachments', out, concurrency: 4 });
    expect(exported.report.problems).toBe(0);
    expect(exported.report.counts.ok).toBe(55);

    const sent = await attachmentRequests(emu());
    const result = await importAttachments(api(), out);
    expect(result.report.counts).toMatchObject({ ok: 49, skipped: 6, conflict: 0, invalid: 0, failed: 0 });
    const skipped = result.report.items.filter((i) => i.outcome === 'skipped');
    expect(skipped.map((i) => i.code).sort()).toEqual([...REPEATED, ...REPEATED].sort());
    for (const item of skipped) {
      expect(item.file_name).toBe('certificate.pdf');
      expect(item.reason).toContain('already holds these bytes');
    }
    // Only the 49 files the service can replace were sent, in one update request per file part.
    const after = await attachmentRequests(emu());
    expect(after.update - sent.update).toBe(2);
    expect(after.register - sent.register).toBe(0);
    expect(await attachmentFacts(emu())).toEqual(before);
  });

  it('still reports a conflict for a file of a repeated name whose bytes the service does not hold', async () => {
    await emu().control('POST', '/reset');
    const before = await attachmentFacts(emu());
    const dir = tempDir('wds-sample-other-');
    mkdirSync(join(dir, 'A0005'));
    writeFileSync(join(dir, 'A0005', 'certificate.pdf'), pdf(4321));
    const result = await importAttachments(api(), dir, { sheet: QUALIFICATIONS.sheet, field: QUALIFICATIONS.field });
    expect(result.report.counts).toMatchObject({ ok: 0, skipped: 0, conflict: 1 });
    expect(result.report.items[0]!.reason).toContain('holds 2 records with a file named "certificate.pdf"');
    expect(await attachmentFacts(emu())).toEqual(before);
  });
});
