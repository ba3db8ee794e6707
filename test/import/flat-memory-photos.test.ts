/**
 * A photo import's memory does not grow with its files (issue 46): the real CLI imports a drop
 * folder of FILES tiny JPEGs with its old generation held to HEAP_LIMIT_MB, MEMBERS of them for
 * members without a photo (checked and sent) and the rest for codes no member has yet (refused by
 * their names, as a drop folder keeps them until the member exists). The import before kept the
 * source's file object of every photo named from its read to its end (with the dedupe map, the
 * routed copies and the report's set of keys) and ran out of heap here (checked: it died under
 * 16 MB while reading 20,000 names, and at 16,000); with its plan on disk and the source read
 * again for the photos as they are checked, it finishes, in the fewest requests.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';

const MEMBERS = 1_000;
const FILES = 20_000;
/** Old-generation limit of the CLI (--max-old-space-size), MB: the import itself needs some 13. */
const HEAP_LIMIT_MB = 16;

const emu = useEmulator({ generate: { members: MEMBERS, files: false }, maintenance: false, limits: { updatesPerMinute: 10000 } });

it(`imports a folder of ${FILES} photos with a heap of ${HEAP_LIMIT_MB} MB`, async () => {
  const dir = tempDir('wds-import-memory-');
  // A real JPEG of a few hundred bytes, the same for every member.
  const jpeg = await sharp({ create: { width: 8, height: 8, channels: 3, background: { r: 90, g: 120, b: 200 } } }).jpeg().toBuffer();
  for (let n = 1; n <= FILES; n += 1) await writeFile(join(dir, `G${String(n).padStart(6, '0')}.jpg`), jpeg);
  // Without trimming the emulator stores each photo as it came instead of decoding it.
  const run = await runCli(['photos', 'import', dir, '--no-trim', '--json', ...connectionArgs(emu())], {
    NODE_OPTIONS: `--max-old-space-size=${HEAP_LIMIT_MB}`,
    // 10 requests: the client's windows as the emulator's, not the service's 5 a minute.
    WDS_CLIENT_LIMITS: 'update=10000/1m',
  });
  expect(run.stderr).not.toContain('heap out of memory');
  // 3: finished, with the files for unknown members not taken.
  expect(run.code, run.stderr.slice(-2000)).toBe(3);
  const summary = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { counts: Record<string, number>; requests: Record<string, number> };
  expect(summary.counts).toMatchObject({ ok: MEMBERS, invalid: FILES - MEMBERS, conflict: 0, skipped: 0, failed: 0 });
  expect(summary.requests).toEqual({ register: MEMBERS / 100, update: 0, minimum: MEMBERS / 100, resubmitted: 0 });
}, 120_000);
