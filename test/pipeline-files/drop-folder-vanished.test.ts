/**
 * pipelines/photo-dropbox.yaml run by `wds-files run` as a child process, with a photo deleted
 * from the inbox after the run has listed the folder and before it reads the photo: the file is
 * named as gone and skipped, and the run of the others is ok (exit 0), not a partial one.
 */
import { existsSync } from 'node:fs';
import { readdir, rm, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import { finished, spawnCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { photoHashes, plain, writeFiles } from '../import/photo-helpers.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });
const names = async (dir: string): Promise<string[]> => (await readdir(dir).catch(() => [] as string[])).sort();

afterEach(async () => {
  await emu().control('DELETE', '/faults');
});

it('a photo deleted after the inbox was listed is named as gone and skipped; the others are sent and moved, and the run is ok', async () => {
  const drop = tempDir('wds-dropbox-gone-');
  const inbox = join(drop, 'inbox');
  await writeFiles(inbox, {
    'A0011.jpg': await plain(60, 80, 11).jpeg().toBuffer(),
    'A0012.jpg': await plain(60, 80, 12).jpeg().toBuffer(),
    'A0013.jpg': await plain(60, 80, 13).jpeg().toBuffer(),
  });
  // Older than the shipped file's settle_seconds, so that every photo is taken.
  const then = new Date(Date.now() - 60_000);
  for (const name of await names(inbox)) await utimes(join(inbox, name), then, then);
  const before = await photoHashes(emu());
  // The names are read while the service is asked for its photos (two slow answers); the photos'
  // bytes only after it has answered, so a deletion in between comes after the listing.
  await emu().control('POST', '/faults', { api: { latency_ms: 1_500 } });
  const child = spawnCli(['run', 'pipelines/photo-dropbox.yaml', '--json'], { WDS_DROPBOX: drop, WDS_BASE_URL: emu().url, WDS_CONSUMER_KEY: KEY, WDS_CONSUMER_SECRET: SECRET });
  const done = finished(child);
  const deadline = Date.now() + 20_000;
  while (!existsSync(`${inbox}.lock`) && Date.now() < deadline) await sleep(20);
  await sleep(800);
  const gone = join(inbox, 'A0012.jpg');
  await rm(gone);
  const run = await done;

  expect(run.code, run.stderr).toBe(0);
  expect(run.stderr).toContain(`${gone}: gone before it was read`);
  const summary = JSON.parse(run.stdout.trim()) as Record<string, unknown>;
  expect(summary).toMatchObject({ pipeline: 'photo-dropbox', status: 'ok', exit_code: 0, files: 2, counts: { ok: 2, skipped: 1, invalid: 0, failed: 0 }, moved: { done: 2, refused: 0, left: 0 } });
  const after = await photoHashes(emu());
  expect(after.get('A0011')).not.toBe(before.get('A0011'));
  expect(after.get('A0013')).not.toBe(before.get('A0013'));
  expect(after.get('A0012')).toBe(before.get('A0012'));
  expect(await names(join(drop, 'done'))).toEqual(['A0011.jpg', 'A0013.jpg']);
  expect(await names(join(drop, 'refused'))).toEqual([]);
  expect(await names(inbox)).toEqual([]);
}, 60_000);
