/**
 * The read stage of the imports: every file of the source by name and size, before any file's
 * bytes are read. Names are cheap (a folder's entries, a zip's central directory, a CSV's lines),
 * so duplicates and unknown members are found before anything is read or sent; the bytes are
 * read later, a batch at a time, by the check stage.
 */
import type { ImportSource, RefusedFile, SourceFile, SourceWant } from '../../sources/source.js';
import { GONE_REASON } from '../../sources/file-rules.js';
import { interruptedBy, type RunReport } from '../report.js';
import { SortedSpill } from '../../util/sorted-spill.js';

export interface NamedFiles {
  /** The files to import, in source order (none kept when they were handed to `onFile`). */
  files: SourceFile[];
  /** Every entry of the source, refused ones too: the total of an interrupted run. */
  entries: number;
}

/**
 * The source's files of the kind (sheet, field) the import wants; an entry the source refuses (a
 * link, a path out of the root, an unreadable name) is reported invalid with its rule and the
 * member its name or source gives (`memberOf`, '' when neither does), one gone since the listing
 * is skipped ({@link reportGone}), and what an export holds for other imports is a note. A stop
 * (`signal`) lets the reading go on for NAMES_AFTER_STOP more names, so that a stopped run's
 * report names every file of a source of usual size ({@link reportUnreached}), but a source of a
 * million names does not hold the stop up; the reading lets the event loop turn every so often so
 * that the stop is heard. With `onFile`, each file is handed to it (with its position among the
 * files) rather than kept.
 */
export async function readNames(
  source: ImportSource, want: Omit<SourceWant, 'note'>, report: RunReport, memberOf: (refused: RefusedFile) => string, signal?: AbortSignal,
  onFile?: (file: SourceFile, order: number) => Promise<void> | void,
): Promise<NamedFiles> {
  const files: SourceFile[] = [];
  let entries = 0;
  let order = 0;
  let stoppedAt: number | undefined;
  for await (const entry of source.entries({ ...want, note: (line) => report.notes.push(line) })) {
    if (entries % NAMES_BETWEEN_TURNS === 0 && entries > 0) await turn();
    if (signal?.aborted) stoppedAt ??= entries;
    if (stoppedAt !== undefined && entries - stoppedAt >= NAMES_AFTER_STOP) {
      report.notes.push(`stopped while reading the names: the files after the first ${entries.toLocaleString('en-US')} were not looked at`);
      break;
    }
    entries += 1;
    if (entry.kind === 'refused' && entry.refused.gone) {
      reportGone(report, { where: entry.refused.where, fileName: entry.refused.relPath }, memberOf(entry.refused));
      continue;
    }
    if (entry.kind === 'refused') {
      const { where, relPath, reason } = entry.refused;
      report.add({ key: where, code: memberOf(entry.refused), file_name: relPath, outcome: 'invalid', reason, path: where });
      continue;
    }
    if (onFile) await onFile(entry.file, order);
    else files.push(entry.file);
    order += 1;
  }
  return { files, entries };
}

/** Names read between two turns of the event loop: a source whose names come from memory (a CSV) never waits on its own. */
const NAMES_BETWEEN_TURNS = 1000;

/** Names still read after a stop, so that the report names them as not reached. */
const NAMES_AFTER_STOP = 10_000;

/** Lets the event loop run timers, I/O and signal handlers. */
export const turn = (): Promise<void> => new Promise((done) => setImmediate(done));

/**
 * A stopped import's files that got no outcome, each reported `skipped` with the signal, so that
 * its report still names every file; `code` is each file's member as far as its name says.
 */
export function reportUnreached(report: RunReport, files: readonly SourceFile[], code: (file: SourceFile) => string, signal: AbortSignal): void {
  const reason = `not sent: the run was stopped (${interruptedBy(signal)}) before it reached this file; run it again to send it`;
  report.addUnreached(files.map((file) => ({ key: file.where, code: code(file), file_name: file.fileName, path: file.where, size: file.size })), reason);
}

/**
 * {@link reportUnreached} for files that were not kept, and a report that keeps no set of the keys
 * it holds (both grow with the files): the source's first `entries` entries are read again, and
 * merged by key with the report's items, both sorted through temporary files.
 */
export async function reportUnreachedAgain(
  report: RunReport, source: ImportSource, want: Omit<SourceWant, 'note'>, entries: number, code: (file: SourceFile) => string, signal: AbortSignal,
): Promise<void> {
  const reason = `not sent: the run was stopped (${interruptedBy(signal)}) before it reached this file; run it again to send it`;
  const had = new SortedSpill<null>(4096, 16 * 1024);
  const files = new SortedSpill<[string, string, number]>(4096, 16 * 1024);
  try {
    for (const item of report.eachItem()) had.addNow(item.key, null);
    let read = 0;
    for await (const entry of source.entries({ ...want, note: () => undefined })) {
      if (read++ >= entries) break;
      if (read % NAMES_BETWEEN_TURNS === 0) await turn();
      if (entry.kind === 'file') files.addNow(entry.file.where, [code(entry.file), entry.file.fileName, entry.file.size]);
    }
    const keys = had.sorted()[Symbol.asyncIterator]();
    let key = await keys.next();
    let unreached = 0;
    for await (const [where, [member, fileName, size]] of files.sorted()) {
      while (!key.done && key.value[0] < where) key = await keys.next();
      if (!key.done && key.value[0] === where) continue;
      report.add({ key: where, code: member, file_name: fileName, path: where, size, outcome: 'skipped', reason });
      unreached += 1;
    }
    report.interrupted!.unreached = (report.interrupted!.unreached ?? 0) + unreached;
  } finally {
    had.close();
    files.close();
  }
}

/**
 * A file deleted or moved away between the listing and its read is skipped, not refused: there is
 * nothing left to send, and nothing the user must fix.
 */
export function reportGone(report: RunReport, file: { where: string; fileName: string }, code: string): void {
  report.add({ key: file.where, code, file_name: file.fileName, outcome: 'skipped', reason: GONE_REASON, path: file.where });
}

/** How a file for a code no member has is refused (its reason starts so): a drop folder may keep such files until the member exists. */
export const UNKNOWN_MEMBER_REASON = 'no member has the code';

/** How an item that is not sent is reported: the file, its member and why. */
export function refuse(
  report: RunReport, file: { where: string; fileName: string } | (Pick<SourceFile, 'where' | 'relPath'> & { fileName?: string }), code: string, outcome: 'invalid' | 'conflict', reason: string,
): void {
  report.add({ key: file.where, code, file_name: file.fileName ?? ('relPath' in file ? file.relPath : ''), outcome, reason, path: file.where });
}

/** `work`'s answer; when it throws, the source is closed first (the run that would close it never starts). */
export async function closingOnError<T>(source: ImportSource, work: () => T): Promise<T> {
  try {
    return work();
  } catch (error) {
    await source.close();
    throw error;
  }
}
