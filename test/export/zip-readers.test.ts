/**
 * A zip export reads with the streaming reader of another ecosystem: Java's ZipInputStream, which
 * walks local headers front to back and refuses a stored entry whose sizes follow it in a data
 * descriptor ("only DEFLATED entries can have EXT descriptor"). Every entry, stored or deflated,
 * must come out whole, with the bytes the manifest names. Runs where `java` is installed (Debian's
 * openjdk, which .ci/run installs when it is missing; `java File.java` runs a source file without
 * a build step).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { readZipExport, tempDir } from '../helpers/export.js';
import { runExport } from '../../src/pipelines/export.js';

const READER = fileURLToPath(new URL('../helpers/ZipStreamRead.java', import.meta.url));
const hasJava = spawnSync('java', ['-version'], { stdio: 'ignore' }).status === 0;

const emu = useEmulator({
  // Attachments over the zip sink's in-memory limit (1 MB) go through its spool files.
  generate: { members: 40, photo_bytes: [20_000, 60_000], attachments_per_member: [1, 2], attachment_bytes: [5_000, 1_500_000] },
});
const api = useClient(emu);

describe.skipIf(!hasJava)("Java's ZipInputStream", () => {
  it.each(['photos', 'attachments'] as const)('reads every entry of a %s zip whole', async (what) => {
    const out = join(tempDir(), `${what}.zip`);
    await runExport({ client: api(), what, out, concurrency: 8 });
    const java = spawnSync('java', [READER, out], { encoding: 'utf8' });
    expect(java.stderr).toBe('');
    expect(java.status).toBe(0);
    const read = new Map(java.stdout.trim().split('\n').map((line) => {
      const [name, size, crc] = line.split('\t');
      return [name!, { size: Number(size), crc32: Number(crc) }];
    }));

    const contents = await readZipExport(out);
    expect([...read.keys()]).toEqual(contents.order);
    const manifest = contents.manifest;
    expect(manifest.length).toBeGreaterThan(20);
    for (const line of manifest) {
      const entry = contents.files.get(line.path)!;
      expect(read.get(line.path), line.path).toEqual({ size: line.size, crc32: entry.crc32 });
    }
    if (what === 'attachments') {
      // Both kinds were there: stored (PDF) and deflated (CSV) entries, some spooled.
      const methods = new Set([...contents.files.values()].map((e) => e.compressionMethod));
      expect(methods).toEqual(new Set([0, 8]));
      expect(manifest.some((l) => l.size > 1024 * 1024 && l.path.endsWith('.pdf'))).toBe(true);
    }
  });
});
