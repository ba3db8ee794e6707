/**
 * An attachment import's memory does not grow with its files (issue 46): the real CLI imports
 * FILES small PDFs (two a member) into a company whose file part already holds two files a member,
 * with its old generation held to HEAP_LIMIT_MB. The import before kept an object a file from its
 * read to its end (about 1 KB a file: it died under 20 MB at 8,000 files), and later still kept
 * the file part's listing whole (its body, and every held file's name, date and download URL);
 * with its plan and the listings on disk, it finishes, in the fewest requests. Half the files
 * replace a held file of their name, so both kinds of request go. Run again, the import reads the
 * journal of those FILES files (which was read whole, and kept as an object a file) and sends nothing.
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

// Each member: a contract, and two qualification records with a file each (certificate-n.pdf or scores-n.csv).
const emu = useEmulator({
  generate: { members: MEMBERS, photo_ratio: 0, attachments_per_member: [3, 3], attachment_bytes: [2048, 2048] },
  maintenance: false, limits: { updatesPerMinute: 10000 },
});

it(`imports ${FILES} attachments with a heap of ${HEAP_LIMIT_MB} MB`, async () => {
  const dir = tempDir('wds-import-memory-');
  const data = pdf(700);
  for (let m = 1; m <= MEMBERS; m += 1) {
    const member = join(dir, `G${String(m).padStart(6, '0')}`);
    await mkdir(member);
    await writeFile(join(member, 'doc-0.pdf'), data);
    await writeFile(join(member, 'certificate-1.pdf'), data);
  }
  const state = tempDir('wds-import-memory-state-');
  const importAll = async (): Promise<{ counts: Record<string, number>; requests: Record<string, number> }> => {
    const run = await runCli(['attachments', 'import', dir, '--sheet', '2', '--field', '1306', '--json', ...connectionArgs(emu())], {
      NODE_OPTIONS: `--max-old-space-size=${HEAP_LIMIT_MB}`,
      // 20 requests: the client's windows as the emulator's, not the service's 5 a minute.
      WDS_CLIENT_LIMITS: 'update=10000/1m',
      XDG_STATE_HOME: state,
    });
    expect(run.stderr).not.toContain('heap out of memory');
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    return JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { counts: Record<string, number>; requests: Record<string, number> };
  };
  const summary = await importAll();
  expect(summary.counts.ok).toBe(FILES);
  const { register, update, minimum, resubmitted } = summary.requests;
  expect({ register: register! + update!, resubmitted }).toEqual({ register: minimum, resubmitted: 0 });
  expect(update).toBeGreaterThan(0);

  const again = await importAll();
  expect(again.counts).toMatchObject({ ok: 0, skipped: FILES });
  expect(again.requests).toMatchObject({ register: 0, update: 0 });
}, 600_000);
