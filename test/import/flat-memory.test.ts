/**
 * An attachment import's memory does not grow with its files (issue 46): the real CLI imports
 * FILES small PDFs (two a member) with its old generation held to HEAP_LIMIT_MB. The import before
 * kept an object a file from its read to its end (the source's file, its placed, routed and
 * checked copies, what the journal and the report kept of it: about 1 KB a file) and ran out of
 * heap here (checked once: it died under 20 MB at 8,000 files); with its plan on disk and the
 * source read again for the files as they are checked, it finishes, in the fewest requests.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { pdf } from './attachment-files.js';

const MEMBERS = 10_000;
const FILES = 2 * MEMBERS;
/** Old-generation limit of the CLI (--max-old-space-size), MB. */
const HEAP_LIMIT_MB = 24;

const emu = useEmulator({ generate: { members: MEMBERS, files: false }, maintenance: false, limits: { updatesPerMinute: 10000 } });

it(`imports ${FILES} attachments with a heap of ${HEAP_LIMIT_MB} MB`, async () => {
  const dir = tempDir('wds-import-memory-');
  const data = pdf(700);
  for (let m = 1; m <= MEMBERS; m += 1) {
    const member = join(dir, `G${String(m).padStart(6, '0')}`);
    await mkdir(member);
    await writeFile(join(member, 'doc-0.pdf'), data);
    await writeFile(join(member, 'doc-1.pdf'), data);
  }
  const run = await runCli(['attachments', 'import', dir, '--sheet', '2', '--field', '1306', '--json', ...connectionArgs(emu())], {
    NODE_OPTIONS: `--max-old-space-size=${HEAP_LIMIT_MB}`,
    // 20 requests: the client's windows as the emulator's, not the service's 5 a minute.
    WDS_CLIENT_LIMITS: 'update=10000/1m',
  });
  expect(run.stderr).not.toContain('heap out of memory');
  expect(run.code, run.stderr.slice(-2000)).toBe(0);
  const summary = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { counts: Record<string, number>; requests: Record<string, number> };
  expect(summary.counts.ok).toBe(FILES);
  expect(summary.requests).toEqual({ register: FILES / 1000, update: 0, minimum: FILES / 1000, resubmitted: 0 });
}, 600_000);
