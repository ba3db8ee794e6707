/** What `verify` finds, and the tally each kind of target's check adds to (verify.ts, verify-zip.ts, verify-folder.ts). */
import type { ManifestLine } from '../sinks/manifest.js';
import { ItemList } from '../stages/report-spill.js';

/** A file of an export that does not match its manifest. */
export interface VerifyProblem {
  /** The file's path inside the export. */
  path: string;
  /** What is wrong: missing, another size or sha256, unreadable, not in the manifest... */
  problem: string;
}

/** What {@link verifyExport} found. */
export interface VerifyResult {
  /** The folder or zip checked. */
  target: string;
  /** Files the manifest lists. */
  files: number;
  /** Bytes of the files that match. */
  bytes: number;
  /** Files present with the manifest's size and sha256. */
  ok: number;
  /** Every file missing, differing, unreadable or not in the manifest, and every manifest line refused. */
  problems: VerifyProblem[];
  /**
   * With `{ items: true }`: every manifest line and every other file, in the order checked, and
   * how each came out; kept in a temporary file, read back as it is iterated.
   */
  items?: VerifyItems;
}

/** One file as `verify --report` lists it. */
export interface VerifyItem {
  /** The file's path inside the export, as its manifest line names it. */
  path: string;
  /** Whether the file matches its manifest line. */
  outcome: 'ok' | 'problem';
  /** Bytes, of a file that matches. */
  size?: number;
  /** What is wrong, of a file that does not. */
  problem?: string;
}

/**
 * Every file `verify` checked and how it came out ({@link VerifyResult.items}), in the order
 * checked. The items go to a temporary file as they are checked, a part at a time, so that
 * verify's memory does not grow with the files (issue 46); iterating reads them back, a part at a
 * time, as often as wanted. The file has no name on disk, and its space is freed by `close()`,
 * or when the object is collected. Should the temporary folder refuse it, the items stay in memory.
 */
export class VerifyItems implements Iterable<VerifyItem> {
  private readonly list = new ItemList<VerifyItem>().keepOnDisk();
  private closed = false;
  private added = 0;

  /** How many items there are. */
  get count(): number {
    return this.added;
  }

  /** Adds one file's outcome. */
  add(item: VerifyItem): void {
    this.checkOpen();
    this.list.push(item);
    this.added += 1;
  }

  /** The items, in the order checked. Throws after `close()`. */
  *[Symbol.iterator](): Iterator<VerifyItem> {
    this.checkOpen();
    yield* this.list.read();
  }

  /** Frees the temporary file; iterating or adding after it throws. */
  close(): void {
    this.closed = true;
    this.list.close();
  }

  private checkOpen(): void {
    if (this.closed) throw new Error('the items of verify were closed: they are no longer readable');
  }
}

/** The result of one verify as its files are checked. */
export class VerifyTally {
  readonly result: VerifyResult;

  constructor(target: string, items: boolean) {
    this.result = { target, files: 0, bytes: 0, ok: 0, problems: [], ...(items ? { items: new VerifyItems() } : {}) };
  }

  fail(path: string, problem: string): void {
    this.result.problems.push({ path, problem });
    this.result.items?.add({ path, outcome: 'problem', problem });
  }

  pass(path: string, size: number): void {
    this.result.ok += 1;
    this.result.bytes += size;
    this.result.items?.add({ path, outcome: 'ok', size });
  }

  /** A file found with `size` and `sha256`, against its manifest line. */
  compare(line: ManifestLine, size: number, sha256: string): void {
    if (size !== line.size) this.fail(line.path, `size ${size} bytes, the manifest says ${line.size}`);
    else if (sha256 !== line.sha256) this.fail(line.path, 'sha256 differs from the manifest');
    else this.pass(line.path, size);
  }
}
