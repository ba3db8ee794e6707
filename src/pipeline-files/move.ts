/**
 * A drop folder's `move` (from: {folder, move: {done, refused}}): after an import, each file whose
 * fate is settled leaves the folder, so the next run reads only what is new or still open.
 * - sent, or already held by the service (ok, converted, skipped): to `done/`;
 * - refused for good (invalid, conflict): to `refused/`, with `<name>.reason.txt` beside it;
 * - failed or unknown: left where it is, for the next run to try or settle;
 * - for a member that does not exist yet, when the pipeline runs on `member_created` (`waitForMembers`):
 *   left too, since the member's registration runs it again;
 * - gone before it was read (deleted after the folder was listed): skipped by name, nothing to move.
 * A file is never moved over an existing one: the second `A0001.jpg` becomes `A0001 (2).jpg`.
 * Each move waits for a look at the drop folder's lock (`<folder>.lock`, beside it): once another
 * run has taken it over, the files are that run's to send and move, and this one moves no more.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, constants, link, mkdir, stat, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, join, relative, isAbsolute } from 'node:path';
import type { ItemReport, RunReport } from '../stages/report.js';
import type { ImportSource } from '../sources/source.js';
import { openSource } from '../sources/open-source.js';
import type { PipelineFrom } from './load.js';
import { GONE_REASON, isGone } from '../sources/file-rules.js';
import { LockLostError, type TargetLock } from '../util/target-lock.js';
import { UNKNOWN_MEMBER_REASON } from '../stages/import/read.js';

export interface MoveCounts {
  done: number;
  refused: number;
  /** Left in the folder: failed, unknown, or changed since it was read. */
  left: number;
}

const DONE = new Set<ItemReport['outcome']>(['ok', 'converted', 'skipped']);
const REFUSED = new Set<ItemReport['outcome']>(['invalid', 'conflict']);

export async function moveSettled(
  report: RunReport, folder: string, move: { done: string; refused: string }, log: (line: string) => void, lock?: TargetLock,
  options: { waitForMembers?: boolean } = {},
): Promise<MoveCounts> {
  const counts: MoveCounts = { done: 0, refused: 0, left: 0 };
  const seen = new Set<string>();
  for (const item of report.items) {
    const path = item.path;
    if (!path || seen.has(path)) continue;
    seen.add(path);
    const rel = relative(folder, path);
    if (!rel || rel.startsWith('..') || isAbsolute(rel)) continue;
    // Gone before it was read, so never sent: a file put back under its name since then is a new drop.
    if (item.reason === GONE_REASON) continue;
    const waits = options.waitForMembers && item.outcome === 'invalid' && item.reason?.startsWith(`${UNKNOWN_MEMBER_REASON} `);
    const to = waits ? null : DONE.has(item.outcome) ? move.done : REFUSED.has(item.outcome) ? move.refused : null;
    if (waits) log(`${path}: waits for member ${item.code} to be registered (member_created runs this pipeline again)`);
    if (!to) {
      counts.left += 1;
      continue;
    }
    try {
      // A file replaced in the folder while the run read it is a new drop: it stays for the next run.
      if (item.sha256 && (await sha256Of(path)) !== item.sha256) {
        log(`${path}: changed since it was read; left for the next run`);
        counts.left += 1;
        continue;
      }
      await lock?.assertHeld();
      await placeWithoutOverwrite(path, join(to, rel), to === move.refused ? `${item.reason ?? item.outcome}\n` : undefined);
      if (to === move.done) counts.done += 1;
      else counts.refused += 1;
    } catch (error) {
      if (error instanceof LockLostError) throw error;
      const code = (error as NodeJS.ErrnoException).code;
      // Gone already (moved by hand, or a folder refused whole): nothing to move.
      if (code === 'ENOENT' || code === 'EISDIR' || code === 'EPERM') continue;
      log(`${path}: could not be moved to ${to} (${code ?? (error as Error).message}); left where it is`);
      counts.left += 1;
    }
  }
  return counts;
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Links the file at its new place under the first free name, then removes the old name; copies
 * across file systems. With a `reason`, the name is one whose `NAME.reason.txt` is free too, and
 * the reason is written there first: a reason left from an earlier refusal (its file taken away
 * since), or a file of the user's of that name, is never read as this file's.
 */
async function placeWithoutOverwrite(from: string, wanted: string, reason?: string): Promise<string> {
  await mkdir(dirname(wanted), { recursive: true });
  const ext = extname(wanted);
  const stem = basename(wanted, ext);
  for (let n = 1; n < 1000; n += 1) {
    const target = n === 1 ? wanted : join(dirname(wanted), `${stem} (${n})${ext}`);
    const reasonFile = `${target}${REASON_SUFFIX}`;
    if (reason !== undefined) {
      try {
        await writeFile(reasonFile, reason, { flag: 'wx' });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw error;
      }
    }
    try {
      if (!(await linkOrCopy(from, target))) {
        if (reason !== undefined) await unlink(reasonFile);
        continue;
      }
    } catch (error) {
      if (reason !== undefined) await unlink(reasonFile).catch(() => undefined);
      throw error;
    }
    await unlink(from);
    return target;
  }
  throw new Error(`no free name for ${basename(wanted)} in ${dirname(wanted)}`);
}

/** What a refused file's reason is written in, beside it. */
const REASON_SUFFIX = '.reason.txt';

/** The file at `target` (a hard link, or a copy across file systems); false when the name is taken. */
async function linkOrCopy(from: string, target: string): Promise<boolean> {
  try {
    await link(from, target);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EXDEV') throw error;
  }
  try {
    await copyFile(from, target, constants.COPYFILE_EXCL);
    return true;
  } catch (copyError) {
    if ((copyError as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw copyError;
  }
}

/**
 * The source without the files changed in the last `seconds`: a photo still being copied into a
 * drop folder is left for the next run instead of being read half-written and refused.
 */
export function settledOnly(source: ImportSource, seconds: number, log: (line: string) => void): ImportSource {
  if (seconds <= 0) return source;
  return {
    label: source.label,
    close: () => source.close(),
    async *entries(want) {
      for await (const entry of source.entries(want)) {
        if (entry.kind === 'file') {
          const info = await stat(entry.file.where).catch((error: NodeJS.ErrnoException) => error);
          if (info instanceof Error) {
            if (isGone(info)) yield { kind: 'refused', refused: { where: entry.file.where, relPath: entry.file.relPath, reason: GONE_REASON, gone: true } };
            else yield entry;
            continue;
          }
          if (Date.now() - info.mtimeMs < seconds * 1000) {
            log(`${entry.file.where}: changed less than ${seconds} s ago (it may still be being copied); left for the next run`);
            continue;
          }
        }
        yield entry;
      }
    },
  };
}

/**
 * The source a pipeline's run (or plan) reads, as the run reads it: a drop folder (one with
 * `move`) leaves its newest files for the next run, and its inbox, done and refused folders are
 * made when missing (`make`), as a fresh clone has none; a run that writes nothing reads a
 * missing inbox as empty instead.
 */
export async function openPipelineSource(from: Exclude<PipelineFrom, { service: unknown }>, options: { make: boolean; log: (line: string) => void }): Promise<ImportSource> {
  if (!('folder' in from)) return openSource('zip' in from ? from.zip : from.csv);
  if (from.move) {
    if (options.make) {
      for (const folder of [from.folder, from.move.done, from.move.refused]) await mkdir(folder, { recursive: true });
    } else if (!(await stat(from.folder).catch(() => null))) {
      options.log(`${from.folder} does not exist yet: a run makes it, and reads nothing from it this time`);
      return { label: from.folder, close: async () => undefined, async *entries() {} };
    }
  }
  return settledOnly(await openSource(from.folder), from.settle_seconds, options.log);
}
