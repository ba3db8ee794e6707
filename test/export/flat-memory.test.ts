/**
 * An export's memory does not grow with its files (issue 46): the real CLI exports 50,000 small
 * attachments with its old generation held to HEAP_LIMIT_MB. An export that held every listed
 * file (the listing's text and objects, a job and a URL per file, as the CLI did before) ran out
 * of heap at this limit, and at lower ones, long before its end; without such state it finishes.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';

const MEMBERS = 25_000;
const FILES = 2 * MEMBERS;
/** Old-generation limit of the CLI (--max-old-space-size), MB: the CLI before issue 46 died under it at 50,000 files. */
const HEAP_LIMIT_MB = 64;

const emu = useEmulator({
  generate: { members: MEMBERS, photo_ratio: 0, attachments_per_member: [2, 2], attachment_bytes: [2048, 2048] },
  maintenance: false,
});

it(`exports ${FILES} attachments with a heap of ${HEAP_LIMIT_MB} MB`, async () => {
  const out = join(tempDir(), 'out');
  const run = await runCli(['attachments', 'export', '-o', out, ...connectionArgs(emu())], { NODE_OPTIONS: `--max-old-space-size=${HEAP_LIMIT_MB}` });
  expect(run.stderr).not.toContain('heap out of memory');
  expect(run.code, run.stderr.slice(-2000)).toBe(0);
  expect(run.stdout).toMatch(/attachments export: 50,?000 ok/);
  const lines = (await readFile(join(out, 'manifest.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { kind: string; size?: number });
  const files = lines.filter((l) => l.kind === 'attachment');
  expect(files).toHaveLength(FILES);
  expect(files.every((f) => f.size === 2048)).toBe(true);
  // Bounds nothing but a CLI that never ends: 50,000 downloads on a loaded machine take minutes.
}, 600_000);
