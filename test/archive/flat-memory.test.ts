/**
 * An unchanged archive run's memory does not grow with its files (issue 46): after a first
 * snapshot of 20,000 small attachments, the real CLI makes the next one with its old generation
 * held to HEAP_LIMIT_MB. A run that held a line and a link item for every unchanged file (and the
 * listed file with its URL beside each, as the CLI did before) ran out of heap at 48 MB with
 * 40,000 files, about 0.8 KB a file: 20,000 of them take it past 24 MB. Linking a part of the
 * files at a time, it finishes and links every file (in December 2026 it needed more than 16 MB
 * here, and less than 16 with 2,000 files).
 *
 * Then every file changes (the service's clock an hour on, the company made again) and the next
 * run downloads all 20,000 under the same limit: the run that started each file part's changed
 * files as one array of jobs, every file with its URL, held them all (600 MB of heap at 200,000).
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { archiveRun, manifestOf, resetStats, storageDownloads } from './helpers.js';

const MEMBERS = 10_000;
const FILES = 2 * MEMBERS;
/** Old-generation limit of the CLI (--max-old-space-size), MB: the CLI before died under twice it at 40,000 unchanged files. */
const HEAP_LIMIT_MB = 24;

const emu = useEmulator({
  generate: { members: MEMBERS, photo_ratio: 0, attachments_per_member: [2, 2], attachment_bytes: [2048, 2048] },
  maintenance: false,
}, 60_000);
const api = useClient(emu);

const dir = tempDir('wds-archive-memory-');
const archive = join(dir, 'archive');
const pipelineFile = join(dir, 'archive.yaml');

it(`links ${FILES} unchanged attachments into the next snapshot with a heap of ${HEAP_LIMIT_MB} MB`, async () => {
  // The first snapshot in this process: only the unchanged run is the one measured.
  const first = (await archiveRun(api(), archive, { archive: { pipeline: 'memory-test' } })).snapshot!;
  expect(first.counts.files).toBe(FILES);
  await writeFile(pipelineFile, [
    'name: memory-test',
    `connection: { base_url: "${emu().url}", consumer_key: ${KEY}, consumer_secret: ${SECRET} }`,
    'from: { service: attachments }',
    'to: { archive: ./archive }',
    '',
  ].join('\n'));
  await resetStats(emu());
  await runWithLimit();
  expect(await storageDownloads(emu())).toBe(0);
  const latest = (await readFile(join(archive, 'latest'), 'utf8')).trim();
  expect(latest).not.toBe(first.id);
  const snapshot = join(archive, 'snapshots', latest);
  const lines = await manifestOf(snapshot);
  expect(lines.size).toBe(FILES);
  // Every file is a hard link to the first snapshot's copy, not a new file.
  const sample = [...lines.values()].filter((_, i) => i % 997 === 0);
  for (const line of sample) {
    const [now, before] = await Promise.all([stat(join(snapshot, line.path)), stat(join(first.path, line.path))]);
    expect(now.ino).toBe(before.ino);
  }
  // Bounds nothing but a CLI that never ends: 20,000 files on a loaded machine take minutes.
}, 900_000);

it(`downloads ${FILES} changed attachments into the next snapshot with a heap of ${HEAP_LIMIT_MB} MB`, async () => {
  const before = (await readFile(join(archive, 'latest'), 'utf8')).trim();
  await emu().control('POST', '/clock', { advance_seconds: 3600 });
  await emu().control('POST', '/reset');
  await runWithLimit();
  expect(await storageDownloads(emu())).toBe(FILES);
  const latest = (await readFile(join(archive, 'latest'), 'utf8')).trim();
  expect(latest).not.toBe(before);
  const lines = await manifestOf(join(archive, 'snapshots', latest));
  expect(lines.size).toBe(FILES);
  const earlier = await manifestOf(join(archive, 'snapshots', before));
  // Each file keeps its path, with the new date.
  for (const [key, line] of lines) {
    expect(line.path, key).toBe(earlier.get(key)?.path);
    expect(line.updated_at, key).not.toBe(earlier.get(key)?.updated_at);
  }
}, 900_000);

async function runWithLimit(): Promise<void> {
  const run = await runCli(['run', pipelineFile, '--json'], { NODE_OPTIONS: `--max-old-space-size=${HEAP_LIMIT_MB}` });
  expect(run.stderr).not.toContain('heap out of memory');
  expect(run.code, run.stderr.slice(-2000)).toBe(0);
}
