/**
 * `archive check` of a bucket archive: every snapshot's snapshot.json and manifest readable, the
 * object each manifest line names there with its size (from one listing of data/, a request per
 * 1,000 objects), `latest` naming a complete snapshot, and with `readDataPercent` that share of
 * the objects downloaded and hashed, as restic's `--read-data-subset` does. An object named by
 * several snapshots is read once.
 *
 * Memory does not grow with the files (issue 46): each manifest is downloaded to a temporary file
 * and read a part at a time, and its lines and the listing's objects are sorted together by sha256
 * through temporary files (sorted-spill.ts), so that an object comes just before the lines that
 * name it. The objects to read are drawn from a temporary file of them, as a folder's check does.
 */
import { createHash } from 'node:crypto';
import { dirname } from 'node:path';
import { LATEST_FILE, isAccepted } from '../store.js';
import type { CheckResult } from '../check.js';
import { MANIFEST_NAME } from '../../sinks/manifest.js';
import { openManifestInOrder } from '../../sinks/manifest-order.js';
import { ItemSpill } from '../../stages/report-spill.js';
import { SortedSpill } from '../../util/sorted-spill.js';
import { dataName, type BucketStore } from './store.js';

/** Objects downloaded and hashed at once. */
const READS_AT_ONCE = 8;
/** Objects and lines sorted in memory at a time: beside the S3 client's own, 8,192 took a 16 MB heap over the limit. */
const SORTED_A_RUN = 2048;
/** Objects named by a line, gathered before they are written to the temporary file. */
const GROUPS_PER_PART = 1000;

/** An object of the listing (its size), or a line naming one: [snapshot's index, line number, path, size]. */
type Sorted = { object: number } | { line: [number, number, string, number] };

/** An object to read, and the lines that name it: [snapshot's index, path]. */
interface Group {
  sha256: string;
  lines: [number, string][];
}

export async function checkBucketArchive(store: BucketStore, options: { readDataPercent?: number } = {}): Promise<CheckResult> {
  const { snapshots, partial } = await store.listSnapshots();
  const result: CheckResult = { snapshots: snapshots.length, files: 0, read: 0, partial, problems: [], change_times: false, damaged: [] };
  /** Problems with where they sort: the snapshot's index, then the line's number (0 for the snapshot's own). */
  const found: { at: [number, number]; problem: CheckResult['problems'][number] }[] = [];
  const problem = (at: [number, number], snapshot: string, text: string, path?: string): void => {
    found.push({ at, problem: { snapshot, ...(path ? { path } : {}), problem: text } });
  };
  const sorted = new SortedSpill<Sorted>(SORTED_A_RUN);
  const groups = options.readDataPercent ? ItemSpill.create<Group>(result) : null;
  let groupCount = 0;
  try {
    // The objects first: a sort keeps equal keys in the order added, so an object precedes its lines.
    for await (const page of store.listDataPages()) for (const o of page) await sorted.add(o.sha256, { object: o.size });
    for (const [index, snapshot] of snapshots.entries()) {
      if (!snapshot.doc) problem([index, 0], snapshot.id, snapshot.problem ?? 'snapshot.json cannot be read');
      let file;
      let manifest;
      try {
        file = await store.manifestFile(snapshot);
        manifest = await openManifestInOrder(dirname(file.file), { file: file.file });
      } catch (error) {
        await file?.release();
        problem([index, 0], snapshot.id, (error as Error).message);
        continue;
      }
      try {
        for (const p of manifest.problems) problem([index, 0], snapshot.id, `${MANIFEST_NAME} ${p}`);
        if (snapshot.doc && snapshot.doc.counts.files !== manifest.count) {
          problem([index, 0], snapshot.id, `snapshot.json counts ${snapshot.doc.counts.files} files, the manifest lists ${manifest.count}`);
        }
        for await (const { line, number } of manifest.lines()) {
          result.files += 1;
          await sorted.add(line.sha256, { line: [index, number, line.path, line.size] });
        }
      } finally {
        await manifest.close();
        await file.release();
      }
    }
    let part: Group[] = [];
    /** The sha256 whose lines are being read, the size of its object (null: none), and its group to read. */
    const current: { sha256: string; size: number | null; group: Group | null } = { sha256: '', size: null, group: null };
    for await (const [sha256, value] of sorted.sorted()) {
      if (current.sha256 !== sha256) {
        if (current.group) part.push(current.group);
        Object.assign(current, { sha256, size: null, group: null });
      }
      if ('object' in value) {
        current.size = value.object;
        continue;
      }
      const [index, number, path, size] = value.line;
      const snapshot = snapshots[index]!.id;
      if (current.size === null) problem([index, number], snapshot, `missing: no object ${dataName(sha256)}`, path);
      else if (current.size !== size) problem([index, number], snapshot, `object ${dataName(sha256)} is ${current.size} bytes, the manifest says ${size}`, path);
      else if (groups) (current.group ??= { sha256, lines: [] }).lines.push([index, path]);
      if (groups && part.length >= GROUPS_PER_PART) {
        groups.append(part);
        groupCount += part.length;
        part = [];
      }
    }
    if (current.group) part.push(current.group);
    groups?.append(part);
    groupCount += part.length;
  } catch (error) {
    groups?.close();
    throw error;
  } finally {
    sorted.close();
  }
  found.sort((a, b) => a.at[0] - b.at[0] || a.at[1] - b.at[1]);
  result.problems.push(...found.map((f) => f.problem));
  const add = (snapshot: string, text: string, path?: string): void => {
    result.problems.push({ snapshot, ...(path ? { path } : {}), problem: text });
  };
  const complete = snapshots.filter((s) => isAccepted(s.doc)).map((s) => s.id);
  const latest = await store.readLatest();
  if (latest === null) {
    if (complete.length) add(LATEST_FILE, `missing, though ${complete.at(-1)} is complete`);
  } else if (!complete.includes(latest)) add(LATEST_FILE, `names ${latest}, which is not a complete snapshot of ${store.where}`);
  else if (latest !== complete.at(-1)) add(LATEST_FILE, `names ${latest}, but ${complete.at(-1)} is newer and complete`);
  if (groups) {
    try {
      await readData(store, groups, groupCount, Math.min(groupCount, Math.ceil((groupCount * options.readDataPercent!) / 100)), result, (index, text, path) => add(snapshots[index]!.id, text, path));
    } finally {
      groups.close();
    }
  }
  return result;
}

/**
 * Downloads and hashes `share` of the `count` objects, drawn at random as they are read back
 * (Knuth's selection sampling, as a folder's check draws), READS_AT_ONCE at a time.
 */
async function readData(store: BucketStore, groups: ItemSpill<Group>, count: number, share: number, result: CheckResult, problem: (index: number, text: string, path: string) => void): Promise<void> {
  const reading = new Set<Promise<void>>();
  let seen = 0;
  for (const group of groups.read()) {
    const draw = Math.random() * (count - seen) < share - result.read;
    seen += 1;
    if (!draw) continue;
    result.read += 1;
    const done: Promise<void> = (async () => {
      const { sha256 } = group;
      const bytes = await store.bucket.get(dataName(sha256)).catch((error: unknown) => error as Error);
      const why = bytes instanceof Error ? `cannot be read: ${bytes.message}` : bytes === null ? `missing: no object ${dataName(sha256)}`
        : createHash('sha256').update(bytes).digest('hex') !== sha256 ? `sha256 of object ${dataName(sha256)} differs from the manifest` : null;
      if (why) for (const [index, path] of group.lines) problem(index, why, path);
    })().finally(() => reading.delete(done));
    reading.add(done);
    if (reading.size >= READS_AT_ONCE) await Promise.race(reading);
  }
  await Promise.all(reading);
}
