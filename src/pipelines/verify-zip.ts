/** `verify` of an export zip: its manifest is its last entry, so every entry is hashed on the way and compared after. */
import { createHash } from 'node:crypto';
import { MANIFEST_NAME, parseManifest } from '../sinks/manifest.js';
import { ZipReader, type ZipEntry } from '../sources/zip-reader.js';
import type { VerifyTally } from './verify-result.js';

/** An entry as read: its size and sha256, or why its bytes could not be read. */
type Seen = { size: number; sha256: string } | { unreadable: string };

/** Checks every entry of the zip `target` against the manifest in it. */
export async function verifyZip(target: string, tally: VerifyTally): Promise<void> {
  const zip = await ZipReader.open(target);
  try {
    const { seen, manifestText } = await readEntries(zip, target);
    if (manifestText === null) throw new Error(`${target}: no ${MANIFEST_NAME} in the zip; it is not a complete export`);
    const manifest = parseManifest(manifestText);
    for (const p of manifest.problems) tally.fail(MANIFEST_NAME, p);
    for (const line of manifest.lines.values()) {
      tally.result.files += 1;
      const got = seen.get(line.path);
      seen.delete(line.path);
      if (!got) tally.fail(line.path, 'missing');
      else if ('unreadable' in got) tally.fail(line.path, got.unreadable);
      else tally.compare(line, got.size, got.sha256);
    }
    for (const extra of seen.keys()) tally.fail(extra, 'not in the manifest');
  } finally {
    zip.close();
  }
}

/** Every file entry hashed, and the manifest's text (null when the zip has none). */
async function readEntries(zip: ZipReader, target: string): Promise<{ seen: Map<string, Seen>; manifestText: string | null }> {
  const seen = new Map<string, Seen>();
  let manifestText: string | null = null;
  for await (const entry of zip.entries()) {
    if (entry.isDirectory) continue;
    if (entry.name === MANIFEST_NAME) {
      manifestText = await readManifest(zip, entry, target);
      continue;
    }
    // An entry whose bytes differ from its CRC-32 or declared size is a problem of that entry.
    try {
      const hash = createHash('sha256');
      let size = 0;
      for await (const c of await zip.openStream(entry)) {
        hash.update(c as Buffer);
        size += (c as Buffer).length;
      }
      seen.set(entry.name, { size, sha256: hash.digest('hex') });
    } catch (error) {
      seen.set(entry.name, { unreadable: (error as Error).message });
    }
  }
  return { seen, manifestText };
}

async function readManifest(zip: ZipReader, entry: ZipEntry, target: string): Promise<string> {
  const chunks: Buffer[] = [];
  try {
    for await (const c of await zip.openStream(entry)) chunks.push(c as Buffer);
  } catch (error) {
    throw new Error(`${target}: its ${MANIFEST_NAME} cannot be read: ${(error as Error).message}`);
  }
  return Buffer.concat(chunks).toString('utf8');
}
