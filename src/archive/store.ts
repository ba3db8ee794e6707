/**
 * The snapshot archive on disk (DESIGN.md section 10): `snapshots/<id>/` for finished snapshots,
 * `snapshots/<id>.partial/` for one being built, and `latest`, a text file naming the newest
 * complete snapshot. Ids are the UTC time the run started, `YYYY-MM-DDTHHMMSS`, with `-2`, `-3`...
 * when two runs start in the same second; they sort in the order the runs were made.
 */
import { randomBytes } from 'node:crypto';
import { readFile, readdir, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { MANIFEST_NAME, checkManifestLine, parseManifest, type ManifestLine } from '../sinks/manifest.js';
import { firstLine } from '../util/first-line.js';
import { readLines } from '../util/line-reader.js';
import type { ExportSource } from '../sinks/source.js';

export const SNAPSHOTS_DIR = 'snapshots';
export const LATEST_FILE = 'latest';
export const SNAPSHOT_FILE = 'snapshot.json';
export const PARTIAL_SUFFIX = '.partial';

const countsSchema = z.looseObject({
  /** Files listed. */
  files: z.number().int().min(0),
  /** Files the previous snapshot did not have. */
  new: z.number().int().min(0),
  /** Files updated since the previous snapshot. */
  changed: z.number().int().min(0),
  /** Files taken over from the previous snapshot as they were. */
  unchanged: z.number().int().min(0),
  /**
   * Files unchanged at the service whose copy in the previous snapshot was missing or damaged
   * (its size or change time not what the archive wrote, or found damaged by `check --read-data`):
   * downloaded again. Absent in snapshots made before it was counted.
   */
  repaired: z.number().int().min(0).optional(),
  /** Files of the previous snapshot no longer listed. */
  deleted: z.number().int().min(0),
  /** Files that could not be downloaded. */
  failed: z.number().int().min(0),
});

/** `snapshot.json`: what a snapshot holds and how it was made. */
export const snapshotDocSchema = z.looseObject({
  pipeline: z.string(),
  started_at: z.string(),
  finished_at: z.string(),
  complete: z.boolean(),
  counts: countsSchema,
  bytes: z.looseObject({ total: z.number().int().min(0), new: z.number().int().min(0) }),
  /** The snapshot this one was compared with (its unchanged files are linked from there), or null for the first. */
  previous: z.string().nullable(),
  /** How unchanged files were taken over: hard links, or copies on a file system without them. */
  unchanged_files: z.enum(['hard links', 'copies']).optional(),
  /**
   * Why the snapshot was held back: its run found more of the previous snapshot's files deleted
   * than the pipeline's `max_delete` allows. It is whole, but `latest` stays where it was, and
   * retention and later runs go by the last snapshot not held back.
   */
  held: z.string().optional(),
  /** Where the files came from (src/sinks/source.ts); snapshots made before sources were recorded have none. */
  source: z.object({ base_url: z.string(), company: z.string() }).optional(),
});
export type SnapshotDoc = z.infer<typeof snapshotDocSchema>;
/** Whether a snapshot counts as the archive's newest: complete and not held back. */
export const isAccepted = (doc: SnapshotDoc | null): boolean => doc !== null && doc.complete && doc.held === undefined;

/** How a snapshot's files compare with the previous snapshot's. @interface */
export type SnapshotCounts = z.infer<typeof countsSchema>;

/** A finished snapshot folder, with its snapshot.json, or why that could not be read. */
export interface SnapshotEntry {
  id: string;
  dir: string;
  doc: SnapshotDoc | null;
  problem?: string;
  /** Said to the user with the snapshot: `latest` named one that is gone, and this one stands in. */
  note?: string;
}

const ID = /^(\d{4})-(\d\d)-(\d\d)T(\d\d)(\d\d)(\d\d)(?:-(\d+))?$/;

/** The id of a snapshot started at `date` (UTC), before any same-second suffix. */
export function snapshotIdAt(date: Date): string {
  const iso = date.toISOString();
  return `${iso.slice(0, 10)}T${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
}

/** When a snapshot id says it was started, and its same-second number (1 for none); null if it is not an id. */
export function parseSnapshotId(id: string): { time: Date; n: number } | null {
  const m = ID.exec(id);
  if (!m) return null;
  const time = new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
  if (Number.isNaN(time.getTime()) || snapshotIdAt(time) !== id.slice(0, 17)) return null;
  return { time, n: m[7] ? Number(m[7]) : 1 };
}

/**
 * The snapshot archive that holds `path` (the path itself or a folder above it), or null. An
 * archive is a folder whose `snapshots/` holds a snapshot (finished or `.partial`), or that has
 * `latest`: a `snapshots/` folder alone is not taken for one. A folder or zip written there by
 * anything but an archive run would change a snapshot behind its manifest and snapshot.json.
 */
export async function archiveHolding(path: string): Promise<string | null> {
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    if (await isArchiveFolder(dir)) return dir;
    if (dirname(dir) === dir) return null;
  }
}

async function isArchiveFolder(dir: string): Promise<boolean> {
  const names = await readdir(join(dir, SNAPSHOTS_DIR)).catch(() => null);
  if (!names) return false;
  if (names.some((name) => parseSnapshotId(name.endsWith(PARTIAL_SUFFIX) ? name.slice(0, -PARTIAL_SUFFIX.length) : name))) return true;
  return (await stat(join(dir, LATEST_FILE)).catch(() => null))?.isFile() === true;
}

/**
 * Why `out` (a folder, or a zip with `zip`) may not be written, being inside a snapshot archive;
 * null when it may. `shown` names it in the message.
 */
export async function insideArchiveProblem(out: string, zip: boolean, shown = out): Promise<string | null> {
  const archive = await archiveHolding(zip ? dirname(resolve(out)) : out);
  return archive
    ? `${shown} is inside the snapshot archive ${archive}, which holds only what its runs write: an export there could change a snapshot. Name a folder or zip outside it (wds-files archive restore copies a snapshot out)`
    : null;
}

export function compareSnapshotIds(a: string, b: string): number {
  const pa = parseSnapshotId(a)!;
  const pb = parseSnapshotId(b)!;
  return pa.time.getTime() - pb.time.getTime() || pa.n - pb.n;
}

/** An id for a run started at `now` that sorts after every id in `taken` (a clock set back included). */
export function nextSnapshotId(now: Date, taken: string[]): string {
  let id = snapshotIdAt(now);
  const newest = [...taken].sort(compareSnapshotIds).at(-1);
  if (newest && compareSnapshotIds(id, newest) <= 0) {
    const { time, n } = parseSnapshotId(newest)!;
    id = `${snapshotIdAt(time)}-${n + 1}`;
  }
  return id;
}

export const snapshotsDir = (archive: string): string => join(archive, SNAPSHOTS_DIR);
export const snapshotDir = (archive: string, id: string): string => join(archive, SNAPSHOTS_DIR, id);
export const partialDir = (archive: string, id: string): string => join(archive, SNAPSHOTS_DIR, `${id}${PARTIAL_SUFFIX}`);

async function readDoc(dir: string): Promise<{ doc: SnapshotDoc | null; problem?: string }> {
  let text: string;
  try {
    text = await readFile(join(dir, SNAPSHOT_FILE), 'utf8');
  } catch {
    return { doc: null, problem: `no readable ${SNAPSHOT_FILE}` };
  }
  try {
    const parsed = snapshotDocSchema.safeParse(JSON.parse(text));
    if (parsed.success) return { doc: parsed.data };
    const issue = parsed.error.issues[0];
    return { doc: null, problem: `${SNAPSHOT_FILE}: ${issue?.path.join('.')}: ${issue?.message}` };
  } catch {
    return { doc: null, problem: `${SNAPSHOT_FILE} is not JSON` };
  }
}

/** What `snapshots/` holds: finished snapshots oldest first, and the ids of `.partial` ones. */
export async function listSnapshots(archive: string): Promise<{ snapshots: SnapshotEntry[]; partial: string[] }> {
  let names: string[];
  try {
    names = (await readdir(snapshotsDir(archive), { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { snapshots: [], partial: [] };
    throw error;
  }
  const partial = names.filter((n) => n.endsWith(PARTIAL_SUFFIX)).map((n) => n.slice(0, -PARTIAL_SUFFIX.length)).filter((id) => parseSnapshotId(id)).sort(compareSnapshotIds);
  const ids = names.filter((n) => parseSnapshotId(n)).sort(compareSnapshotIds);
  const snapshots = await Promise.all(ids.map(async (id) => {
    const dir = snapshotDir(archive, id);
    return { id, dir, ...(await readDoc(dir)) };
  }));
  return { snapshots, partial };
}

/** The id `latest` names, or null when there is none. */
export async function readLatest(archive: string): Promise<string | null> {
  try {
    const id = (await readFile(join(archive, LATEST_FILE), 'utf8')).trim();
    return id || null;
  } catch {
    return null;
  }
}

/** Points `latest` at `id`, replacing it in one rename: a reader sees the old id or the new one. */
export async function writeLatest(archive: string, id: string): Promise<void> {
  const temp = join(archive, `.${LATEST_FILE}-${randomBytes(4).toString('hex')}`);
  await writeFile(temp, `${id}\n`);
  await rename(temp, join(archive, LATEST_FILE));
}

/**
 * The snapshot a user names: `@ID` or `ID`, `latest` or nothing for the newest complete one, or
 * `latest~N` for the Nth complete snapshot before it (as git's `HEAD~N`), so that a script can
 * name "the previous night" without knowing its id.
 * Throws a message naming the archive when there is no such snapshot.
 */
export async function findSnapshot(archive: string, ref?: string): Promise<SnapshotEntry> {
  const { snapshots } = await listSnapshots(archive);
  return pickSnapshot(archive, snapshots, await readLatest(archive), ref);
}

/**
 * findSnapshot over what an archive (`where`: its folder or bucket address) holds: its finished
 * snapshots oldest first and the id its `latest` names.
 */
export function pickSnapshot(where: string, snapshots: SnapshotEntry[], latest: string | null, ref?: string): SnapshotEntry {
  const wanted = ref?.replace(/^@/, '');
  const back = /^latest~(\d+)$/.exec(wanted ?? '');
  if (wanted === undefined || wanted === 'latest' || back) {
    const complete = snapshots.filter((s) => isAccepted(s.doc));
    const named = snapshots.find((s) => s.id === latest);
    const newest = named ?? complete.at(-1);
    if (!newest) throw new Error(`${where} holds no complete snapshot${snapshots.length ? '' : ' (no snapshot at all)'}`);
    const note = !named && latest !== null ? `${latestPath(where)} names ${latest}, which is not in snapshots/; the newest complete snapshot, ${newest.id}, stands in for it (wds-files archive check says more)` : undefined;
    if (!back) return note ? { ...newest, note } : newest;
    const steps = Number(back[1]);
    const at = complete.findIndex((s) => s.id === newest.id);
    const found = at - steps >= 0 ? complete[at - steps] : undefined;
    if (!found) throw new Error(`${where} holds ${at + 1} complete snapshot${at === 0 ? '' : 's'} up to latest; latest~${steps} goes past the oldest`);
    return note ? { ...found, note } : found;
  }
  const found = snapshots.find((s) => s.id === wanted);
  if (!found) {
    const known = snapshots.map((s) => s.id);
    throw new Error(`${where} has no snapshot ${wanted}${known.length ? `; it holds ${known.slice(-5).join(', ')}${known.length > 5 ? ' and older ones' : ''}` : '; it holds no snapshot'}`);
  }
  return found;
}

/** `latest` of the archive at `where`: a folder's file, or a bucket archive's object. */
const latestPath = (where: string): string => (where.startsWith('s3://') ? `${where}/${LATEST_FILE}` : join(where, LATEST_FILE));

/**
 * A snapshot's good file lines, in the order of its manifest, read a block at a time (lines that
 * are not good file lines are passed over, as openManifestInOrder counts them among its problems).
 */
export async function* readSnapshotLines(dir: string): AsyncGenerator<ManifestLine> {
  const into = { problems: [] as string[] };
  for await (const { bytes, number } of readLines(join(dir, MANIFEST_NAME), { tail: true })) {
    const line = checkManifestLine(bytes.toString('utf8'), number, into);
    into.problems.length = 0;
    if (line) yield line;
  }
}

/**
 * Where an archive's files come from: the source of the snapshot `latest` names, else of the
 * newest snapshot that records one, else of the newest `.partial`'s manifest. Null when none
 * records one: an archive made before sources were recorded, or a new one.
 */
export async function archiveSource(archive: string, listed?: { snapshots: SnapshotEntry[]; partial: string[] }): Promise<ExportSource | null> {
  const { snapshots, partial } = listed ?? await listSnapshots(archive);
  const latest = await readLatest(archive);
  const named = snapshots.find((s) => s.id === latest)?.doc?.source;
  if (named) return named;
  const newest = snapshots.findLast((s) => s.doc?.source)?.doc?.source;
  if (newest) return newest;
  for (const id of [...partial].reverse()) {
    // Only the first line is read: the source line leads the manifest.
    const source = parseManifest(await firstLine(join(partialDir(archive, id), MANIFEST_NAME))).source;
    if (source) return source;
  }
  return null;
}
