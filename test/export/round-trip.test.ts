/**
 * Photo and attachment exports of a generated company, to a folder and to a zip, hold exactly the
 * company's files (GET /_emulator/state), file by file: identity, original name, size, sha256
 * (issue 4; DESIGN.md section 4). In a zip, compressed types are stored and text deflated, stored
 * entries have their sizes in their local header, the manifest is the last entry, and the zip is
 * written as `<name>.partial` and renamed.
 */
import { existsSync, readdirSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { expectMatchesState, filesUnder, state, tempDir } from '../helpers/export.js';
import { runExport } from '../../src/pipelines/export.js';

const emu = useEmulator({
  generate: { members: 200, photo_bytes: [20_000, 60_000], attachments_per_member: [1, 2], attachment_bytes: [5_000, 50_000] },
});
const api = useClient(emu);

describe.each(['photos', 'attachments'] as const)('%s export', (what) => {
  it('to a folder: every file of the company, nothing else, no temporary file left', async () => {
    const out = join(tempDir(), 'export');
    const result = await runExport({ client: api(), what, out, concurrency: 8 });
    const s = await state(emu());
    const contents = await expectMatchesState(out, s, what);
    expect(contents.manifest.length).toBeGreaterThan(100);
    expect(result.report.counts.ok).toBe(contents.manifest.length);
    expect(result.report.problems).toBe(0);
    expect((await filesUnder(out)).filter((p) => p.includes('.wds-tmp'))).toEqual([]);
    expect(existsSync(join(out, '.wds-tmp'))).toBe(false);
    for (const line of contents.manifest) {
      const prefix = what === 'photos' ? `photos/${line.code}.` : `attachments/${line.sheet_id}/${line.custom_field_id}/${line.code}/`;
      expect(line.path.startsWith(prefix), line.path).toBe(true);
    }
  });

  it('to a zip: the same files, stored or deflated by type, the manifest last, written as .partial and renamed', async () => {
    const dir = tempDir();
    const out = join(dir, `${what}.zip`);
    const seenWhileRunning = new Set<string>();
    const result = await runExport({
      client: api(), what, out, concurrency: 8,
      onProgress: () => {
        for (const name of readdirSync(dir)) seenWhileRunning.add(name);
      },
    });
    // While the run went on, the zip was only there as .partial.
    expect(seenWhileRunning).toContain(`${what}.zip.partial`);
    expect(seenWhileRunning).not.toContain(`${what}.zip`);
    expect(await readdir(dir)).toEqual([`${what}.zip`]);

    const s = await state(emu());
    const contents = await expectMatchesState(out, s, what);
    expect(result.report.counts.ok).toBe(contents.manifest.length);
    expect(contents.order.at(-1)).toBe('manifest.jsonl');
    expect(contents.manifestCompression).toBe(8);
    const methods = new Map<string, Set<number>>();
    for (const [path, entry] of contents.files) {
      const ext = path.slice(path.lastIndexOf('.') + 1);
      methods.set(ext, (methods.get(ext) ?? new Set()).add(entry.compressionMethod!));
    }
    // Stored entries carry their CRC and sizes in the local header, as streaming readers need:
    // Java's ZipInputStream refuses a stored entry whose sizes follow it in a data descriptor.
    for (const [path, entry] of contents.files) {
      if (entry.compressionMethod !== 0) continue;
      expect(entry.local!.flags & 8, path).toBe(0);
      expect([entry.local!.crc32, entry.local!.compressedSize, entry.local!.size], path).toEqual([entry.crc32, entry.size, entry.size]);
    }
    if (what === 'photos') {
      expect(Object.fromEntries([...methods].map(([k, v]) => [k, [...v]]))).toEqual({ jpg: [0] });
    } else {
      // The generated company holds PDFs (already compressed) and CSVs (text).
      expect(Object.fromEntries([...methods].map(([k, v]) => [k, [...v]]))).toEqual({ pdf: [0], csv: [8] });
    }
  });
});
