/**
 * The attachment round trip of issue 5 (Done when; DESIGN.md section 4): the attachments of a
 * generated company, exported by the export pipeline to a folder and to a zip, imported into a
 * company with the same members and no files, give the same attachments in `/_emulator/state`:
 * sheet, field, code, record index, file name and sha256, file by file.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { state, tempDir } from '../helpers/export.js';
import { runExport } from '../../src/pipelines/export.js';
import type { WdsClient } from '../../src/index.js';
import { attachmentFacts, factsOf, importAttachments } from './attachment-helpers.js';

const MEMBERS = 120;
const LIMITS = { update: { limit: 10000, windowMs: 60_000 } };
const source = useEmulator({ generate: { members: MEMBERS, photo_ratio: 0, attachments_per_member: [1, 4], attachment_bytes: [3000, 40_000] } });
const target = useEmulator({ generate: { members: MEMBERS, files: false }, limits: { updatesPerMinute: 10000 } });

let from: WdsClient;
let to: WdsClient;

beforeAll(() => {
  from = clientFor(source());
  to = clientFor(target(), { limits: LIMITS });
});

afterAll(async () => {
  await from?.close();
  await to?.close();
});

describe.each(['folder', 'zip'] as const)('export to a %s, import into the company without files', (kind) => {
  it('restores every attachment in its record, byte for byte, in the fewest requests', async () => {
    await target().control('POST', '/reset');
    expect(await attachmentFacts(target())).toEqual([]);
    const original = factsOf((await state(source())).attachments);
    // Both sheets, and members with several qualification records.
    expect(new Set(original.map((a) => a.sheet_id))).toEqual(new Set([1, 2]));
    expect(original.some((a) => a.sheet_id === 2 && a.record_index >= 2)).toBe(true);

    const out = join(tempDir('wds-round-trip-'), kind === 'zip' ? 'attachments.zip' : 'attachments');
    const exported = await runExport({ client: from, what: 'attachments', out, concurrency: 4 });
    expect(exported.report.problems).toBe(0);

    const result = await importAttachments(to, out);
    expect(result.report.problems).toBe(0);
    expect(result.report.counts.ok).toBe(original.length);
    // One register request per file part: every file is new and all fit in one request each.
    expect(result.requests).toEqual({ register: 2, update: 0, minimum: 2, resubmitted: 0 });
    expect(await attachmentFacts(target())).toEqual(original);
  });
});
