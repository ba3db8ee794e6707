/**
 * A file that only its bytes can make a skip (add mode, a name the member holds) is compared with
 * the held file through the listing's download URL, which expires 15 service minutes after the
 * listing. Such files are checked before the lanes' requests go: checked after them, as they once
 * were, a run whose requests took longer than the URLs live (more than about 75 requests at the
 * service's 5 a minute) found the held file gone and reported a conflict, which fails a nightly
 * run, where the file was in fact already there.
 *
 * Here the clock runs 240 times as fast (URLs live 3.75 s) and the first request's answer is held
 * back 4 s:
 * with 5,100 files in the lane, the checks then wait for it, and a file checked after the lane's
 * files would find its URL expired.
 */
import { expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import { writeFiles } from './photo-helpers.js';
import { importAttachments, pdf, QUALIFICATIONS, startAttachmentProxy } from './attachment-helpers.js';

const emu = useEmulator({ seed: 'samples/company', clockSpeed: 240, maintenance: false, limits: { updatesPerMinute: 100_000 } });
const LANE_FILES = 5100;

it('a file whose bytes the member already holds is skipped, though the lane\'s requests outlive the download URLs', async () => {
  // The answer to the first register request comes 4 s late: longer than a URL lives at this clock.
  const proxy = await startAttachmentProxy(emu().url, { holdFirstWriteMs: 4000 });
  const client = clientFor(emu(), { baseUrl: proxy.url, limits: { update: { limit: 100_000, windowMs: 60_000 } } });
  try {
    const listing = await client.attachments.list(QUALIFICATIONS.sheet, QUALIFICATIONS.field);
    const holder = listing.find((m) => m.records.length > 0)!;
    const held = holder.records[0]!;
    const bytes = Buffer.from(await (await fetch(held.download_url)).arrayBuffer());
    const others = listing.map((m) => m.code).filter((code) => code !== holder.code);
    const files: Record<string, Buffer> = { [`${holder.code}/${held.file_name}`]: bytes };
    const data = pdf(700);
    for (let i = 0; i < LANE_FILES; i += 1) files[`${others[i % others.length]}/bulk-${i}.pdf`] = data;
    const dir = await writeFiles(tempDir('wds-held-url-'), files);

    const result = await importAttachments(client, dir, { sheet: QUALIFICATIONS.sheet, field: QUALIFICATIONS.field, mode: 'add' });
    const item = result.report.items.find((i) => i.path === `${dir}/${holder.code}/${held.file_name}`);
    expect(item, JSON.stringify(result.report.counts)).toMatchObject({ outcome: 'skipped', reason: expect.stringContaining('already holds these bytes') });
    expect(result.report.counts).toMatchObject({ ok: LANE_FILES, skipped: 1, conflict: 0 });
  } finally {
    await client.close();
    await proxy.close();
  }
}, 60_000);
