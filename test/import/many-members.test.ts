/**
 * An import into a company of many members keeps of its listings only what it needs (issue 46):
 * the member codes, and each photo's or file's `updated_at`, read entry by entry. The real CLI
 * imports a few photos and a few attachments into a company of MEMBERS members with its old
 * generation held to HEAP_LIMIT_MB. The members' listing is about 1.3 KB a member (about 26 MB of
 * text here before it is parsed), so an import that read it whole runs out of heap; one that keeps
 * only the codes finishes.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { pdf } from './attachment-files.js';
import { plain } from './photo-helpers.js';

const MEMBERS = 20_000;
/** Old-generation limit of the CLI (--max-old-space-size), MB. */
const HEAP_LIMIT_MB = 24;
const LIMITED = { NODE_OPTIONS: `--max-old-space-size=${HEAP_LIMIT_MB}` };

const emu = useEmulator({
  generate: { members: MEMBERS, photo_ratio: 0, attachments_per_member: [0, 0] },
  maintenance: false,
  limits: { updatesPerMinute: 10000 },
});
const codes = ['G000001', 'G010000', 'G020000'];

it(`imports photos and attachments into a company of ${MEMBERS} members with a heap of ${HEAP_LIMIT_MB} MB`, async () => {
  const photos = tempDir('wds-photos-');
  const jpeg = await plain(40, 40, 1).jpeg().toBuffer();
  for (const code of codes) await writeFile(join(photos, `${code}.jpg`), jpeg);
  const photoRun = await runCli(['photos', 'import', photos, ...connectionArgs(emu())], LIMITED);
  expect(photoRun.stderr).not.toContain('heap out of memory');
  expect(photoRun.code, photoRun.stderr.slice(-2000)).toBe(0);
  expect(photoRun.stdout).toMatch(/photos import: 3 ok/);

  const files = tempDir('wds-attachments-');
  for (const code of codes) {
    await mkdir(join(files, code));
    await writeFile(join(files, code, 'contract.pdf'), pdf(2_000));
  }
  const fileRun = await runCli(['attachments', 'import', files, '--sheet', '2', '--field', '1306', ...connectionArgs(emu())], LIMITED);
  expect(fileRun.stderr).not.toContain('heap out of memory');
  expect(fileRun.code, fileRun.stderr.slice(-2000)).toBe(0);
  expect(fileRun.stdout).toMatch(/attachments import: 3 ok/);
}, 120_000);
