/**
 * The export's plan stage: each listed file's path in the export, and what to do with it: keep a
 * file an earlier run left intact, link one unchanged since the previous snapshot, or download it.
 */
import type { RemoteFile } from './list-urls.js';
import type { DownloadJob } from './download.js';
import { exportDir, manifestKey, type ManifestLine } from '../../sinks/manifest.js';
import { PathAllocator, PathHashes, safeName } from '../../util/safe-name.js';
import { extensionOf } from '../../spec/extensions.js';

/** What the plan decided for the files of a listing. */
export interface ExportPlan {
  /**
   * Files to download, with their paths: made as they are gone through, once, from the listing
   * (which may be on disk), so that the jobs of a large export are not all held at once.
   */
  jobs: Iterable<DownloadJob>;
  /**
   * Manifest lines of files an earlier run left intact, with nothing to download: looked up in
   * `intact` again as they are gone through, in listing order, so that a rerun into the same
   * folder or zip does not hold a line a file.
   */
  kept: Iterable<ManifestLine>;
  /**
   * The previous snapshot's lines of files unchanged since, each under its file's key: linked from
   * there. Looked up again in `previous` as they are gone through, in listing order, so that a run
   * of 200,000 unchanged files does not hold 200,000 lines.
   */
  link: Iterable<ManifestLine>;
  /** How many lines `link` gives. */
  linked: number;
  /** How many lines of the previous snapshot the listing names (the others were deleted since). */
  previousListed: number;
  /** How many listed files `intact` holds a line of (kept, or downloaded again to its path). */
  intactListed: number;
}

/** The manifest line of a file downloaded to `path`. */
export function lineOf(file: RemoteFile, path: string, size: number, sha256: string): ManifestLine {
  return {
    kind: file.kind, code: file.code, sheet_id: file.sheet_id, custom_field_id: file.custom_field_id,
    record_index: file.record_index, file_name: file.file_name, path, size, sha256, updated_at: file.updated_at,
  };
}

/** An earlier run's lines as this listing names their files (`realign`). */
export interface Realigned {
  lines: ReadonlyMap<string, ManifestLine>;
  /** Lines given another record_index: as the earlier run wrote them, and as they are now. */
  changed: { before: ManifestLine; after: ManifestLine }[];
  /** The key the earlier run gave each moved file, by its key now. */
  movedFrom: ReadonlyMap<string, string>;
}

const NOTHING_MOVED: ReadonlyMap<string, string> = new Map();

/** What names an attachment apart from its record: a moved record keeps its file and updated_at. */
const identityOf = (f: Pick<ManifestLine, 'sheet_id' | 'custom_field_id' | 'code' | 'updated_at' | 'file_name'>): string =>
  JSON.stringify([f.sheet_id, f.custom_field_id, f.code, f.updated_at, f.file_name]);

/**
 * The lines of an earlier run (`earlier`, by key) with the files whose record moved under their
 * key now. An attachment's key holds its record_index, which shifts when a record before it is
 * deleted: an unchanged file (same member, name and updated_at) that the listing shows at another
 * index is taken as the earlier line, given its new index, rather than downloaded again next to
 * itself. A line left at a key a moved file now has (the deleted record's file, of the same name)
 * is given the next free index after its own, so that neither line hides the other. Most runs move
 * nothing, and cost one lookup per listed file; only the members of files not found are looked into.
 */
export function realign(listing: Iterable<RemoteFile>, earlier: ReadonlyMap<string, ManifestLine>): Realigned {
  const same = { lines: earlier, changed: [], movedFrom: NOTHING_MOVED };
  if (earlier.size === 0) return same;
  // What the files not found are, as hashes, and their members: a run where every file changed
  // (all of them "not found") held each listed file and each earlier line here otherwise.
  const missedIdentities = new PathHashes();
  const codes = new Set<string>();
  const missed = (file: RemoteFile): boolean => file.kind === 'attachment' && earlier.get(file.key)?.updated_at !== file.updated_at;
  for (const file of listing) {
    if (!missed(file)) continue;
    missedIdentities.add(identityOf(file));
    codes.add(file.code);
  }
  if (codes.size === 0) return same;
  // The earlier lines a file not found may be (the same identity, or a hash's collision), by identity.
  const byIdentity = new Map<string, ManifestLine[]>();
  const candidates = new Set<string>();
  for (const line of earlier.values()) {
    if (line.kind !== 'attachment' || !codes.has(line.code)) continue;
    const identity = identityOf(line);
    if (!missedIdentities.has(identity)) continue;
    const found = byIdentity.get(identity);
    if (found) found.push(line);
    else byIdentity.set(identity, [line]);
    candidates.add(line.code);
  }
  if (byIdentity.size === 0) return same;
  // The listed files of those members, and the files not found that one of those lines may be.
  const current = new Map<string, RemoteFile>();
  const moving: RemoteFile[] = [];
  for (const file of listing) {
    if (file.kind !== 'attachment' || !candidates.has(file.code)) continue;
    current.set(file.key, file);
    if (missed(file) && byIdentity.has(identityOf(file))) moving.push(file);
  }
  // A line the listed file of its own key still names as it is stays with that file.
  for (const [identity, found] of byIdentity) {
    const left = found.filter((line) => current.get(manifestKey(line))?.updated_at !== line.updated_at);
    if (left.length > 0) byIdentity.set(identity, left);
    else byIdentity.delete(identity);
  }
  const moves: { file: RemoteFile; line: ManifestLine }[] = [];
  for (const file of moving) {
    const line = byIdentity.get(identityOf(file))?.shift();
    if (line) moves.push({ file, line });
  }
  if (moves.length === 0) return same;
  // Only what moved is held: a copy of `earlier` (which may be on disk) would be a line a file.
  const lines = new EditedLines(earlier);
  const movedFrom = new Map<string, string>();
  const changed: Realigned['changed'] = [];
  for (const { line } of moves) lines.delete(manifestKey(line));
  const displaced: ManifestLine[] = [];
  for (const { file, line } of moves) {
    const there = lines.get(file.key);
    if (there) displaced.push(there);
    const after = { ...line, record_index: file.record_index };
    lines.set(file.key, after);
    movedFrom.set(file.key, manifestKey(line));
    changed.push({ before: line, after });
  }
  for (const line of displaced) {
    const after = { ...line };
    do after.record_index! += 1;
    while (lines.has(manifestKey(after)) || current.has(manifestKey(after)));
    lines.set(manifestKey(after), after);
    changed.push({ before: line, after });
  }
  return { lines, changed, movedFrom };
}

/**
 * Decides each file's path, and which files an earlier run left intact (nothing to download). For
 * an archive, `previous` holds the previous snapshot's lines: a file unchanged since is linked from
 * there (`link`), a changed one keeps its path.
 */
export function planExport(listing: Iterable<RemoteFile>, intact: ReadonlyMap<string, ManifestLine>, previous?: ReadonlyMap<string, ManifestLine>): ExportPlan {
  // The paths given a file so far (intact ones, then previous ones), as hashes (an archive run goes
  // through 200,000): a path taken for given by a collision only gives its file a new path.
  const taken = previous ? new PathHashes() : undefined;
  if (taken) for (const line of intact.values()) taken.add(line.path);
  // What becomes of each file, by its place in the listing (a byte each): the jobs and the kept lines are made from it when gone through.
  const decisions = new Decisions();
  let linked = 0;
  let previousListed = 0;
  let intactListed = 0;
  let fresh = 0;
  for (const file of listing) {
    const before = previous?.get(file.key);
    if (before) previousListed += 1;
    const earlier = intact.get(file.key);
    if (earlier) intactListed += 1;
    if (earlier && earlier.updated_at === file.updated_at) {
      decisions.add(Decision.None);
      continue;
    }
    if (earlier) {
      decisions.add(Decision.EarlierPath);
      continue;
    }
    if (before && taken!.add(before.path)) {
      if (before.updated_at === file.updated_at) {
        linked += 1;
        decisions.add(Decision.Link);
      } else decisions.add(Decision.PreviousPath);
      continue;
    }
    decisions.add(Decision.NewPath);
    fresh += 1;
  }
  const jobs = function* (): Generator<DownloadJob> {
    // An archive run with no new file (most nightly runs) skips reserving its 20,000 paths. Files
    // new to the target are given their paths once every path in use is known, in listing order.
    let paths: PathAllocator | null = null;
    if (fresh > 0) {
      paths = new PathAllocator();
      // Reserving a path twice (intact and previous) is reserving it once.
      for (const line of intact.values()) paths.reserve(line.path);
      for (const line of previous?.values() ?? []) paths.reserve(line.path);
    }
    let at = 0;
    for (const file of listing) {
      const decision = decisions.at(at++);
      if (decision === Decision.EarlierPath) yield { file, path: intact.get(file.key)!.path };
      else if (decision === Decision.PreviousPath) yield { file, path: previous!.get(file.key)!.path };
      else if (decision === Decision.NewPath) {
        const name = file.kind === 'photo' ? `${file.code}.${extensionOf(file.file_name) || 'jpg'}` : file.file_name;
        yield { file, path: paths!.allocate(exportDir(file, safeName), name) };
      }
    }
  };
  const link = function* (): Generator<ManifestLine> {
    let at = 0;
    for (const file of listing) if (decisions.at(at++) === Decision.Link) yield previous!.get(file.key)!;
  };
  const kept = function* (): Generator<ManifestLine> {
    let at = 0;
    for (const file of listing) if (decisions.at(at++) === Decision.None) yield intact.get(file.key)!;
  };
  return { jobs: { [Symbol.iterator]: jobs }, kept: { [Symbol.iterator]: kept }, link: { [Symbol.iterator]: link }, linked, previousListed, intactListed };
}

/**
 * A map of manifest lines seen through its changes: `realign`'s moved lines over the earlier
 * run's, which stay where they are (on disk, for a rerun) and are not copied.
 */
class EditedLines implements ReadonlyMap<string, ManifestLine> {
  private readonly gone = new Set<string>();
  private readonly changed = new Map<string, ManifestLine>();

  constructor(private readonly base: ReadonlyMap<string, ManifestLine>) {}

  get(key: string): ManifestLine | undefined {
    return this.changed.get(key) ?? (this.gone.has(key) ? undefined : this.base.get(key));
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  set(key: string, line: ManifestLine): void {
    this.changed.set(key, line);
  }

  delete(key: string): void {
    this.changed.delete(key);
    this.gone.add(key);
  }

  get size(): number {
    let size = this.base.size;
    for (const key of this.gone) if (this.base.has(key)) size -= 1;
    for (const key of this.changed.keys()) if (!this.base.has(key) || this.gone.has(key)) size += 1;
    return size;
  }

  *entries(): MapIterator<[string, ManifestLine]> {
    for (const [key, line] of this.base) if (!this.gone.has(key) && !this.changed.has(key)) yield [key, line];
    yield* this.changed.entries();
  }

  *keys(): MapIterator<string> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): MapIterator<ManifestLine> {
    for (const [, line] of this.entries()) yield line;
  }

  [Symbol.iterator](): MapIterator<[string, ManifestLine]> {
    return this.entries();
  }

  forEach(callback: (value: ManifestLine, key: string, map: ReadonlyMap<string, ManifestLine>) => void, thisArg?: unknown): void {
    for (const [key, line] of this.entries()) callback.call(thisArg, line, key, this);
  }
}

/** Decisions in order, a byte each. */
class Decisions {
  private bytes = new Uint8Array(1024);
  private length = 0;

  add(decision: Decision): void {
    if (this.length === this.bytes.length) {
      const more = new Uint8Array(2 * this.length);
      more.set(this.bytes);
      this.bytes = more;
    }
    this.bytes[this.length++] = decision;
  }

  at(index: number): Decision | undefined {
    return index < this.length ? (this.bytes[index] as Decision) : undefined;
  }
}

/** What the plan does with a file: nothing more (kept), link it, or download it to which path. */
const enum Decision {
  None,
  Link,
  EarlierPath,
  PreviousPath,
  NewPath,
}
