/**
 * `verify` of an export zip: its manifest is its last entry, so every entry is hashed on the way
 * and compared after. What each entry hashed to, and the manifest's lines, are sorted by path
 * through temporary files and merged (issue 46): nothing is kept a file.
 */
import { createHash } from 'node:crypto';
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { MANIFEST_NAME, type ManifestLine } from '../sinks/manifest.js';
import { openManifestInOrder } from '../sinks/manifest-order.js';
import { ZipReader, type ZipEntry } from '../sources/zip-reader.js';
import { SortedSpill } from '../util/sorted-spill.js';
import type { VerifyTally } from './verify-result.js';
import { makeTempDir } from '../util/temp-dir.js';

/** Entries or lines sorted in memory at a time. */
const RUN_VALUES = 4096;

/** An entry as read: its size and sha256, or why its bytes could not be read. */
type Seen = { size: number; sha256: string } | { unreadable: string };

/** Checks every entry of the zip `target` against the manifest in it. */
export async function verifyZip(target: string, tally: VerifyTally): Promise<void> {
  const zip = await ZipReader.open(target);
  // Half the usual run: the last run of the entries is held while the lines gather theirs.
  const seen = new SortedSpill<Seen>(RUN_VALUES);
  const listed = new SortedSpill<Pick<ManifestLine, 'path' | 'size' | 'sha256'>>(RUN_VALUES);
  const temp = await makeTempDir('verify');
  try {
    const manifestFile = join(temp, MANIFEST_NAME);
    if (!(await readEntries(zip, target, seen, manifestFile))) throw new Error(`${target}: no ${MANIFEST_NAME} in the zip; it is not a complete export`);
    const manifest = await openManifestInOrder(temp);
    try {
      for (const p of manifest.problems) tally.fail(MANIFEST_NAME, p);
      for await (const { line } of manifest.lines()) {
        tally.result.files += 1;
        await listed.add(line.path, { path: line.path, size: line.size, sha256: line.sha256 });
      }
    } finally {
      await manifest.close();
    }
    await compare(listed.sorted(), seen.sorted(), tally);
  } finally {
    zip.close();
    seen.close();
    listed.close();
    await rm(temp, { recursive: true, force: true });
  }
}

/**
 * The manifest's lines and the entries, both by path: a line with no entry is missing, an entry
 * with no line is not in the manifest. Of entries with one name the last counts, and a second
 * line naming a path finds it taken.
 */
async function compare(lines: AsyncGenerator<[string, Pick<ManifestLine, 'path' | 'size' | 'sha256'>]>, entries: AsyncGenerator<[string, Seen]>, tally: VerifyTally): Promise<void> {
  let entry = (await entries.next()).value;
  const nextEntry = async (): Promise<[string, Seen] | undefined> => {
    const name = entry![0];
    let next = (await entries.next()).value;
    while (next && next[0] === name) {
      entry = next;
      next = (await entries.next()).value;
    }
    return next;
  };
  let taken: string | null = null;
  for await (const [path, line] of lines) {
    while (entry && entry[0] < path) {
      const last = await nextEntry().then((next) => [entry!, next] as const);
      if (last[0][0] !== taken) tally.fail(last[0][0], 'not in the manifest');
      entry = last[1];
    }
    if (!entry || entry[0] !== path || taken === path) {
      tally.fail(path, 'missing');
      continue;
    }
    const next = await nextEntry();
    const got = entry[1];
    taken = path;
    if ('unreadable' in got) tally.fail(path, got.unreadable);
    else tally.compare(line as ManifestLine, got.size, got.sha256);
    entry = next;
  }
  for (; entry; ) {
    const name = entry[0];
    const next = await nextEntry();
    if (name !== taken) tally.fail(name, 'not in the manifest');
    entry = next;
  }
}

/** Every file entry hashed into `seen`, and the manifest written to `manifestFile`; false when the zip has none. */
async function readEntries(zip: ZipReader, target: string, seen: SortedSpill<Seen>, manifestFile: string): Promise<boolean> {
  let manifest = false;
  for await (const entry of zip.entries()) {
    if (entry.isDirectory) continue;
    if (entry.name === MANIFEST_NAME) {
      await writeManifest(zip, entry, target, manifestFile);
      manifest = true;
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
      await seen.add(entry.name, { size, sha256: hash.digest('hex') });
    } catch (error) {
      await seen.add(entry.name, { unreadable: (error as Error).message });
    }
  }
  return manifest;
}

async function writeManifest(zip: ZipReader, entry: ZipEntry, target: string, file: string): Promise<void> {
  const handle = await open(file, 'w');
  try {
    for await (const c of await zip.openStream(entry)) await handle.write(c as Buffer);
  } catch (error) {
    throw new Error(`${target}: its ${MANIFEST_NAME} cannot be read: ${(error as Error).message}`);
  } finally {
    await handle.close();
  }
}
