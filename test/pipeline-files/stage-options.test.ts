/**
 * The pipelines take their options through the stage registry's schemas (the same ones pipeline
 * files' steps use): an option out of range stops the run before any request, with a message
 * naming the pipeline, the stage, the option and the rule.
 */
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import { runExport } from '../../src/pipelines/export.js';
import { runPhotoImport } from '../../src/pipelines/photo-import.js';
import { runAttachmentImport } from '../../src/pipelines/attachment-import.js';
import { openSource } from '../../src/sources/open-source.js';

const emu = useEmulator({ seed: 'samples/company', maintenance: false });
const client = useClient(emu);

const requests = async (): Promise<number> => {
  const stats = (await emu().control('GET', '/stats')) as { requests: Record<string, number> };
  return Object.values(stats.requests).reduce((a, b) => a + b, 0);
};

describe('stage options', () => {
  it('an export with a bad date or concurrency, an import with a bad concurrency: refused before any request', async () => {
    await emu().control('POST', '/stats/reset');
    await expect(runExport({ client: client(), what: 'photos', out: tempDir('wds-stage-'), concurrency: 0 }))
      .rejects.toThrow('photos export: download.concurrency: must be at least 1');
    await expect(runExport({ client: client(), what: 'attachments', out: tempDir('wds-stage-'), since: '2026-02-30' }))
      .rejects.toThrow('attachments export: list.since: must be a date YYYY-MM-DD');
    await expect(runPhotoImport({ client: client(), source: await openSource(tempDir('wds-stage-src-')), concurrency: 1.5 }))
      .rejects.toThrow(/^photos import: check\.concurrency: /);
    await expect(runAttachmentImport({ client: client(), source: await openSource(tempDir('wds-stage-src-')), concurrency: 99 }))
      .rejects.toThrow('attachments import: check.concurrency: must be at most 16');
    expect(await requests()).toBe(0);
  });
});
