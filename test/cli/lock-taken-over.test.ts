/**
 * Every writer looks at its lock before it completes its target (DESIGN.md section 8), with real
 * CLI children and real SIGSTOP/SIGCONT: a run is stopped while it holds its lock, another run (on
 * another host, where a stale heartbeat lets a lock be taken over) rewrites the lock file and starts
 * its own output, and the first run is continued. `archive restore` (zip and folder), `archive
 * forget` and a drop folder's pipeline run then exit 1 naming the lock file and the other holder,
 * and complete nothing: no zip renamed into place, no file restored, no snapshot removed, no photo
 * moved. A named pipe in the archive holds a run at a known point, as a slow disk would, so that
 * it is stopped before it completes anything.
 */
import { execFileSync } from 'node:child_process';
import { constants, existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { open, readFile, readdir, rm, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { useClient } from '../helpers/client.js';
import { tempDir, state } from '../helpers/export.js';
import { plain, writeFiles } from '../import/photo-helpers.js';
import { archiveRun, manifestOf } from '../archive/helpers.js';
import { start, until } from './two-writers.js';

const emu = useEmulator({ generate: { members: 12, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [3000, 8000] } });
const api = useClient(emu);

const TAKER = `${JSON.stringify({ pid: 4242, host: 'backup-host-2', command: 'wds-files run nightly.yaml', started_at: new Date().toISOString(), token: 'taker' })}\n`;
const TAKEN = (lockFile: string): string => `another run took over the lock ${lockFile} (pid 4242 on backup-host-2: wds-files run nightly.yaml`;

/** Replaces a file by a rename, as a run that takes a lock over or starts a zip makes a new one. */
function replace(file: string, text: string): void {
  writeFileSync(`${file}.new`, text);
  renameSync(`${file}.new`, file);
}

/** `file` becomes a named pipe: a run that reads it waits there until `feed` writes its bytes. */
async function pipeInstead(file: string): Promise<Buffer> {
  const bytes = await readFile(file);
  await rm(file);
  execFileSync('mkfifo', [file]);
  return bytes;
}

/** Writes `bytes` into the pipe once its reader opens it; gives up when the run has ended without opening it. */
async function feed(fifo: string, bytes: Buffer, ended: () => boolean): Promise<void> {
  for (;;) {
    try {
      const handle = await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
      await handle.write(bytes);
      await handle.close();
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENXIO' || ended()) return;
      await sleep(20);
    }
  }
}

/**
 * Starts `args`, waits for `ready`, stops the run (SIGSTOP), lets `takeOver` act as the other run,
 * continues it (SIGCONT) and answers how it ended; `fifo` is fed once it is continued.
 */
async function stopTakeOverContinue(args: string[], ready: () => boolean, takeOver: () => void, fifo?: { path: string; bytes: Buffer }, env?: NodeJS.ProcessEnv) {
  const run = start(args, env);
  let ended = false;
  const done = run.done.finally(() => (ended = true));
  try {
    await until('the run to hold its lock', () => ended || ready());
  } finally {
    if (!ended) process.kill(run.pid, 'SIGSTOP');
  }
  try {
    if (!ended) takeOver();
  } finally {
    if (!ended) process.kill(run.pid, 'SIGCONT');
  }
  if (fifo) await feed(fifo.path, fifo.bytes, () => ended);
  return done;
}

/** An archive of one snapshot whose first file (in manifest order) is a named pipe; answers its path and bytes. */
async function archiveWithPipe(): Promise<{ archive: string; first: string; fifo: { path: string; bytes: Buffer } }> {
  const archive = join(tempDir('wds-archive-'), 'a');
  const snapshot = (await archiveRun(api(), archive)).snapshot!;
  const first = (await readFile(join(snapshot.path, 'manifest.jsonl'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { kind: string; path: string }).filter((l) => l.kind !== 'source')[0]!.path;
  const path = join(snapshot.path, first);
  return { archive, first, fifo: { path, bytes: await pipeInstead(path) } };
}

it('archive restore into a zip, its lock taken over while it was stopped: exit 1, no zip renamed into place, the other run\'s .partial and lock left', async () => {
  const { archive, fifo } = await archiveWithPipe();
  const zip = join(tempDir('wds-restore-'), 'restored.zip');
  const done = await stopTakeOverContinue(['archive', 'restore', archive, '--out', zip],
    () => existsSync(`${zip}.lock`) && existsSync(`${zip}.partial`),
    () => {
      replace(`${zip}.lock`, TAKER);
      replace(`${zip}.partial`, 'the other run\'s zip, half written');
    }, fifo);
  expect(done.code, done.stderr).toBe(1);
  expect(done.stderr).toContain(TAKEN(`${zip}.lock`));
  expect(done.stderr).not.toMatch(/\n\s+at /);
  expect(existsSync(zip)).toBe(false);
  expect(readFileSync(`${zip}.partial`, 'utf8')).toBe('the other run\'s zip, half written');
  expect(readFileSync(`${zip}.lock`, 'utf8')).toBe(TAKER);
}, 60_000);

it('archive restore into a folder, its lock taken over while it was stopped: exit 1, no file restored, no manifest, the other run\'s lock left', async () => {
  const { archive, first, fifo } = await archiveWithPipe();
  const out = join(tempDir('wds-restore-'), 'restored');
  const done = await stopTakeOverContinue(['archive', 'restore', archive, '--out', out],
    () => existsSync(join(out, '.wds-lock')) && existsSync(join(out, '.wds-tmp')),
    () => replace(join(out, '.wds-lock'), TAKER), fifo);
  expect(done.code, done.stderr).toBe(1);
  expect(done.stderr).toContain(TAKEN(join(out, '.wds-lock')));
  expect(existsSync(join(out, first))).toBe(false);
  // Nothing restored, and no manifest: what is in .wds-tmp is left for the other run to clear.
  expect(readdirSync(out).filter((name) => name !== '.wds-tmp')).toEqual(['.wds-lock']);
  expect(readFileSync(join(out, '.wds-lock'), 'utf8')).toBe(TAKER);
}, 60_000);

it('archive forget, the archive\'s lock taken over while it was stopped: exit 1, no snapshot removed', async () => {
  const archive = join(tempDir('wds-archive-'), 'a');
  for (let i = 0; i < 3; i += 1) await archiveRun(api(), archive);
  const snapshots = join(archive, 'snapshots');
  const before = (await readdir(snapshots)).sort();
  expect(before).toHaveLength(3);
  // The newest snapshot's snapshot.json, which forget reads once it holds the lock.
  const doc = join(snapshots, before[2]!, 'snapshot.json');
  const fifo = { path: doc, bytes: await pipeInstead(doc) };
  const done = await stopTakeOverContinue(['archive', 'forget', archive, '--keep-last', '1'],
    () => existsSync(join(archive, '.wds-lock')),
    () => replace(join(archive, '.wds-lock'), TAKER), fifo);
  expect(done.code, done.stderr).toBe(1);
  expect(done.stderr).toContain(TAKEN(join(archive, '.wds-lock')));
  expect((await readdir(snapshots)).sort()).toEqual(before);
  for (const id of before.slice(0, 2)) expect((await manifestOf(join(snapshots, id))).size).toBeGreaterThan(0);
  expect(readFileSync(join(archive, '.wds-lock'), 'utf8')).toBe(TAKER);
}, 60_000);

it('a drop folder\'s run, its lock taken over while it was stopped: exit 1, no photo moved to done/ or refused/', async () => {
  const drop = tempDir('wds-dropbox-');
  const inbox = join(drop, 'inbox');
  const code = (await state(emu())).members[0]!.code;
  const photos = { [`${code}.jpg`]: await plain(60, 80, 31).jpeg().toBuffer(), 'B9999.jpg': await plain(60, 80, 32).jpeg().toBuffer() };
  await writeFiles(inbox, photos);
  const then = new Date(Date.now() - 60_000);
  for (const name of Object.keys(photos)) await utimes(join(inbox, name), then, then);
  const env = { WDS_DROPBOX: drop, WDS_BASE_URL: emu().url, WDS_CONSUMER_KEY: KEY, WDS_CONSUMER_SECRET: SECRET };
  // Each request takes a second: the run is still at work when it is stopped.
  await emu().control('POST', '/faults', { api: { latency_ms: 1000 } });
  try {
    const done = await stopTakeOverContinue(['run', 'pipelines/photo-dropbox.yaml'],
      () => existsSync(`${inbox}.lock`),
      () => replace(`${inbox}.lock`, TAKER), undefined, env);
    expect(done.code, done.stderr).toBe(1);
    expect(done.stderr).toContain(TAKEN(`${inbox}.lock`));
  } finally {
    await emu().control('POST', '/faults', {});
  }
  // The run makes done/ and refused/ when it starts; no photo may have been moved into them.
  for (const folder of ['done', 'refused']) expect(existsSync(join(drop, folder)) ? readdirSync(join(drop, folder)) : []).toEqual([]);
  expect((await readdir(inbox)).sort()).toEqual(Object.keys(photos).sort());
  for (const [name, bytes] of Object.entries(photos)) expect(readFileSync(join(inbox, name))).toEqual(bytes);
  expect(readFileSync(`${inbox}.lock`, 'utf8')).toBe(TAKER);
}, 60_000);
