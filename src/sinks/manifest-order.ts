/**
 * A snapshot's manifest read in manifest order (`compareLines`), one good line a file, without
 * holding its lines: what the commands that read archives (check, diff, restore, verify) merge by
 * key so that their memory does not grow with the number of files (issue 46). A manifest an
 * archive run wrote is in that order already and is read as it is; one that is not (edited by
 * hand, or a later line of a file after an earlier one) is sorted through temporary files by
 * writeSortedManifest first, the last line of a file winning as parseManifest's map has it.
 */
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { MANIFEST_NAME, checkManifestLine, compareLines, type ManifestLine, type ManifestLines } from './manifest.js';
import { writeSortedManifest } from './manifest-sort.js';
import { readLines } from '../util/line-reader.js';
import { makeTempDir } from '../util/temp-dir.js';

/** A good line of the manifest, with its number there (from 1). */
export interface NumberedLine {
  line: ManifestLine;
  number: number;
}

/** A manifest opened in order: what is wrong with its lines is known, its good lines are read on demand. */
export interface OrderedManifest extends Pick<ManifestLines, 'problems' | 'source'> {
  /** Files it lists (good lines, one a file). */
  count: number;
  /** Its good lines in manifest order, one a file; read once. */
  lines(): AsyncGenerator<NumberedLine>;
  /** Removes the temporary files of a manifest that had to be sorted (safe to call twice). */
  close(): Promise<void>;
}

/** The field a sorted copy's line keeps its number in (a name no manifest line has). */
const NUMBER = '\u0000number';

/**
 * Opens the manifest of folder `dir` (a snapshot's or an export's). Throws when it cannot be read.
 * `blockBytes` is read at a time: smaller when many manifests are open at once.
 */
export async function openManifestInOrder(dir: string, options: { blockBytes?: number; file?: string } = {}): Promise<OrderedManifest> {
  const file = options.file ?? join(dir, MANIFEST_NAME);
  const blockBytes = options.blockBytes ?? 64 * 1024;
  const into: Pick<ManifestLines, 'problems' | 'source'> = { problems: [] };
  let count = 0;
  let inOrder = true;
  let last: ManifestLine | undefined;
  for await (const { bytes, number } of readLines(file, { tail: true, blockBytes })) {
    const line = checkManifestLine(bytes.toString('utf8'), number, into);
    if (!line) continue;
    // Equal lines are a file given twice: the later wins, which the sort below sees to.
    if (last && compareLines(last, line) >= 0) inOrder = false;
    last = line;
    count += 1;
  }
  const { problems, source } = into;
  if (inOrder) {
    return {
      problems, count, ...(source ? { source } : {}),
      async* lines() {
        const ignored: Pick<ManifestLines, 'problems' | 'source'> = { problems: [] };
        for await (const { bytes, number } of readLines(file, { tail: true, blockBytes })) {
          const line = checkManifestLine(bytes.toString('utf8'), number, ignored);
          ignored.problems.length = 0;
          if (line) yield { line, number };
        }
      },
      close: async () => undefined,
    };
  }
  const temp = await makeTempDir('manifest');
  try {
    const good = join(temp, 'good.jsonl');
    const handle = await open(good, 'w');
    try {
      let part: string[] = [];
      const ignored: Pick<ManifestLines, 'problems' | 'source'> = { problems: [] };
      for await (const { bytes, number } of readLines(file, { tail: true, blockBytes })) {
        const line = checkManifestLine(bytes.toString('utf8'), number, ignored);
        ignored.problems.length = 0;
        if (line) part.push(`${JSON.stringify({ ...line, [NUMBER]: number })}\n`);
        if (part.length >= 1000) {
          await handle.write(part.join(''));
          part = [];
        }
      }
      await handle.write(part.join(''));
    } finally {
      await handle.close();
    }
    const sorted = join(temp, 'sorted.jsonl');
    count = 0;
    await writeSortedManifest(good, sorted, () => (count += 1));
    await rm(good);
  } catch (error) {
    await rm(temp, { recursive: true, force: true });
    throw error;
  }
  return {
    problems, count, ...(source ? { source } : {}),
    async* lines() {
      for await (const { bytes } of readLines(join(temp, 'sorted.jsonl'), { blockBytes })) {
        const { [NUMBER]: number, ...line } = JSON.parse(bytes.toString('utf8')) as ManifestLine & { [NUMBER]: number };
        yield { line, number };
      }
    },
    close: () => rm(temp, { recursive: true, force: true }),
  };
}
