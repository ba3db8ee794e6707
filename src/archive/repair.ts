/**
 * `archive repair`: the files `archive check` finds damaged (missing, another size, changed when no
 * archive command was writing, or found damaged by `check --read-data`) are replaced by fresh
 * copies from the service, where it still holds the same file unchanged: the same key and
 * updated_at, and bytes whose sha256 is the manifest's. A copy is put in place in every snapshot
 * that holds the file (a new inode, hard-linked into each: the damaged one may have been shared).
 * A file whose only fault is its change time is read first: when its bytes are the manifest's it
 * is kept, and its change time moved into this command's window (a chmod), so that checks and runs
 * take it as the archive's again. The caller holds the archive's lock.
 */
import { randomBytes } from 'node:crypto';
import { chmod, copyFile, link, mkdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Agent } from 'undici';
import type { WdsClient } from '../client/client.js';
import { DEFAULT_RETRY } from '../client/retry.js';
import { downloadFile } from '../stages/export/download.js';
import { listFiles } from '../stages/export/list.js';
import type { RemoteFile } from '../stages/export/list-urls.js';
import { FolderSink } from '../sinks/folder.js';
import { manifestKey, type ManifestLine } from '../sinks/manifest.js';
import { hashFile } from '../util/hash-file.js';
import type { TargetLock } from '../util/target-lock.js';
import { checkArchive, type DamagedCopy } from './check.js';
import { readDamaged, rewriteDamaged } from './damaged.js';
import { snapshotDir } from './store.js';

const STAGING = '.wds-repair';

export interface RepairedFile {
  snapshot: string;
  path: string;
  /** `downloaded`: a fresh copy from the service; `intact`: its bytes were right, only its change time was not. */
  how: 'downloaded' | 'intact';
}

export interface UnrepairedFile {
  snapshot: string;
  path: string;
  reason: string;
}

export interface RepairResult {
  /** Files `archive check` found damaged. */
  damaged: number;
  repaired: RepairedFile[];
  unrepaired: UnrepairedFile[];
  /** Problems of the archive that are no one file's (a manifest, snapshot.json, latest): left as they are. */
  other: string[];
}

/** Copies of one file of the service (same key, updated_at and sha256) over the snapshots. */
interface Group {
  line: ManifestLine;
  copies: DamagedCopy[];
}

export async function repairArchive(archive: string, options: { client: WdsClient; lock?: TargetLock; signal?: AbortSignal }): Promise<RepairResult> {
  const check = await checkArchive(archive);
  const damagedPaths = new Set(check.damaged.map((c) => `${c.snapshot}\0${c.line.path}`));
  const result: RepairResult = {
    damaged: check.damaged.length,
    repaired: [],
    unrepaired: [],
    other: check.problems.filter((p) => !p.path || !damagedPaths.has(`${p.snapshot}\0${p.path}`)).map((p) => `${p.snapshot}${p.path ? ` ${p.path}` : ''}: ${p.problem}`),
  };
  // Only a change time out of place: the bytes are read, once per inode, and kept when right.
  const fetch: DamagedCopy[] = [];
  const readOnce = new Map<string, Promise<string | null>>();
  for (const copy of check.damaged) {
    if (copy.kind !== 'changed' || !copy.inode) {
      fetch.push(copy);
      continue;
    }
    let read = readOnce.get(copy.inode);
    if (!read) readOnce.set(copy.inode, (read = hashFile(copy.path).then((d) => d.sha256, () => null)));
    if ((await read) === copy.line.sha256) {
      await options.lock?.assertHeld();
      await chmod(copy.path, 0o444);
      result.repaired.push({ snapshot: copy.snapshot, path: copy.line.path, how: 'intact' });
    } else fetch.push(copy);
  }
  const groups = new Map<string, Group>();
  for (const copy of fetch) {
    const id = `${manifestKey(copy.line)}\0${copy.line.updated_at}\0${copy.line.sha256}`;
    const group = groups.get(id);
    if (group) group.copies.push(copy);
    else groups.set(id, { line: copy.line, copies: [copy] });
  }
  if (groups.size > 0) await fetchGroups(archive, [...groups.values()], options, result);
  // What the check recorded and this repair replaced says nothing more.
  const recorded = await readDamaged(archive);
  if (recorded.length > 0) {
    const fixed = new Set(result.repaired.map((f) => `${f.snapshot}\0${f.path}`));
    await rewriteDamaged(archive, recorded.filter((f) => !fixed.has(`${f.snapshot}\0${f.path}`)));
  }
  return result;
}

async function fetchGroups(archive: string, groups: Group[], options: { client: WdsClient; lock?: TargetLock; signal?: AbortSignal }, result: RepairResult): Promise<void> {
  const cannot = (group: Group, reason: string): void => {
    for (const copy of group.copies) result.unrepaired.push({ snapshot: copy.snapshot, path: copy.line.path, reason });
  };
  // The service's files now, by key: photos, and the file parts of the sheets the damaged files are in.
  const remote = new Map<string, RemoteFile>();
  const listers: Awaited<ReturnType<typeof listFiles>>['lister'][] = [];
  const photos = groups.some((g) => g.line.kind === 'photo');
  const sheets = [...new Set(groups.filter((g) => g.line.kind === 'attachment').map((g) => g.line.sheet_id!))];
  for (const request of [...(photos ? [{ what: 'photos' as const }] : []), ...(sheets.length ? [{ what: 'attachments' as const, sheets }] : [])]) {
    const listed = await listFiles(options.client, request);
    listers.push(listed.lister);
    for (const file of listed.files) remote.set(file.key, file);
  }
  const staging = join(archive, STAGING);
  await rm(staging, { recursive: true, force: true });
  const sink = await FolderSink.create(staging, { readOnly: true });
  const dispatcher = new Agent({ connections: 4 });
  try {
    for (const [n, group] of groups.entries()) {
      options.signal?.throwIfAborted();
      const key = manifestKey(group.line);
      const file = remote.get(key);
      if (!file) {
        cannot(group, 'the service no longer lists this file');
        continue;
      }
      if (file.updated_at !== group.line.updated_at) {
        cannot(group, `the service holds a newer version (updated_at ${file.updated_at}, the snapshot's is ${group.line.updated_at}); the next run downloads it`);
        continue;
      }
      const path = `${n}`;
      const lister = listers[file.kind === 'photo' || !photos ? 0 : 1]!;
      const got = await downloadFile({ file, path }, { dispatcher, lister, sink, retry: DEFAULT_RETRY, signal: options.signal });
      if (got.outcome !== 'ok') {
        cannot(group, `the download failed: ${got.reason ?? got.outcome}`);
        continue;
      }
      if (got.changed || got.sha256 !== group.line.sha256) {
        cannot(group, `the service's bytes (sha256 ${got.sha256}) are not the manifest's (${group.line.sha256}); the next run downloads them`);
        continue;
      }
      await options.lock?.assertHeld();
      for (const copy of group.copies) {
        await putInPlace(join(staging, path), join(snapshotDir(archive, copy.snapshot), copy.line.path));
        result.repaired.push({ snapshot: copy.snapshot, path: copy.line.path, how: 'downloaded' });
      }
    }
  } finally {
    await dispatcher.close().catch(() => undefined);
    await sink.abort().catch(() => undefined);
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * Puts the fresh copy at `to`: hard-linked under a temporary name beside it (copied where the file
 * system has no hard links) and renamed over the damaged file, which a reader sees whole or not.
 */
async function putInPlace(fresh: string, to: string): Promise<void> {
  await mkdir(dirname(to), { recursive: true });
  const temp = `${to}.wds-repair-${randomBytes(4).toString('hex')}`;
  try {
    await link(fresh, temp).catch(() => copyFile(fresh, temp));
    await rename(temp, to);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
