/**
 * The import journal (DESIGN.md section 8): one file per company under the user's state folder,
 * `$XDG_STATE_HOME/wds-files/journal-<hash of the consumer key>.jsonl`. Every update request is
 * written there before it is sent (each file's member, sha256, route and what the listing showed
 * for it before), then its task id and, once known, which of its files the service applied. Lines
 * are appended and flushed to disk one by one, so a run killed at any moment leaves a journal that
 * the next run reads: requests left open are resolved first, and bytes already applied to a
 * member are not sent again.
 *
 * A journal used night after night is compacted, so that it grows with the files it knows and not
 * with the runs: before a run adds its first line, a journal of which at least half the lines are
 * no longer needed is rewritten to what a rerun still needs (the requests still open, and the last
 * file applied at each target), atomically (see journal-file.ts). A journal in a shared store (the
 * fleet's database) is folded so at every run's start, in one transaction of the store.
 */
import { mkdirSync } from 'node:fs';
import { createHash, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { stateFolder } from '../../../util/xdg.js';
import { dirname, join } from 'node:path';
import { AppliedTable, type AppliedFile } from './applied-table.js';
import { alive, appendLines, PROCESS_TOKEN, readJournal, replaceJournal, type JournalMark } from './file.js';
import type { JournalStore, JournalStores } from './store.js';

export type JournalKind = 'photo' | 'attachment';
export type JournalRoute = 'register' | 'update';

/** One file of a request, as the journal keeps it. */
export interface JournalFile {
  code: string;
  sha256: string;
  /** Attachments: where the file goes and its name. */
  sheet_id?: number;
  custom_field_id?: number;
  file_name?: string;
  /** `updated_at` of the member's photo (or of the file of that name) in the listing before the send; null for none. */
  before: string | null;
}

export interface JournalRequest {
  id: string;
  kind: JournalKind;
  route: JournalRoute;
  /** Local time of the send (ISO 8601), for messages. */
  at: string;
  pid: number;
  host: string;
  /** The sending process's PROCESS_TOKEN (lines of older versions have none). */
  proc?: string;
  files: JournalFile[];
  task_id?: number;
}

export type { AppliedFile };

type Line =
  | ({ t: 'send' } & Omit<JournalRequest, 'task_id'>)
  | { t: 'task'; id: string; task_id: number }
  | { t: 'end'; id: string; applied: boolean[]; how: string }
  | { t: 'seen'; target: string; sha256: string; updated_at: string }
  | ({ t: 'applied'; target: string } & AppliedFile);

/** A journal with fewer lines than this is left as it is, however many of them are no longer needed. */
const COMPACT_FROM_LINES = 64;

/** The journal's key for where a file lands: the member's photo, or a file name in a file part. */
export function targetOf(kind: JournalKind, file: Pick<JournalFile, 'code' | 'sheet_id' | 'custom_field_id' | 'file_name'>): string {
  return kind === 'photo' ? `photo:${file.code}` : `attachment:${file.sheet_id}:${file.custom_field_id}:${file.code}:${file.file_name}`;
}

/**
 * A company's import journal: pass one to {@link runPhotoImport} or {@link runAttachmentImport}
 * so that a rerun settles what a run cut short left open, and skips files already applied.
 * Get it with {@link ImportJournal.open}.
 */
export class ImportJournal {
  #run = randomUUID().slice(0, 8);
  #next = 0;
  readonly #requests = new Map<string, JournalRequest>();
  readonly #open = new Set<string>();
  /** On disk once it grows: a company's journal knows every file ever imported into it. */
  readonly #applied = new AppliedTable();
  /** The file as this run read it, and how many lines it held; undefined when there was none. */
  #mark: JournalMark | undefined;
  #lines = 0;
  /** Compaction is considered once, before this run's first line. */
  #considered = false;
  /** Lines are taken in memory and never written (a dry run's): see {@link inMemoryOnly}. */
  #memoryOnly = false;
  /** This process's requests applied files that are in the file but not in #applied. */
  #forgot = false;

  /** Where the lines go instead of the file: a store shared by many machines. */
  readonly #store: JournalStore | undefined;

  /** @param path The journal file, or where the store is. */
  private constructor(readonly path: string, store?: JournalStore) {
    this.#store = store;
    if (store) return;
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    } catch (error) {
      throw new Error(`cannot make the folder of the import journal ${dirname(path)}: ${(error as Error).message}`);
    }
    this.#load();
  }

  /** The company's journal in `journals` when given (the fleet's database), else its file under the state folder. */
  static async of(consumerKey: string, journals?: JournalStores): Promise<ImportJournal> {
    return journals ? ImportJournal.openStore(journals.journalFor(consumerKey)) : ImportJournal.open(consumerKey);
  }

  /**
   * The journal kept in `store` (the fleet's database) rather than in a file: read now, a part at
   * a time, and folded to what a rerun needs when the store can compact; each line is stored
   * before the request it describes is sent.
   */
  static async openStore(store: JournalStore): Promise<ImportJournal> {
    const journal = new ImportJournal(store.where, store);
    try {
      if (store.compact) await store.compact((read) => journal.#foldFrom(read));
      else await store.load((raw) => journal.#takeRaw(raw), () => journal.#reset());
    } catch (error) {
      journal.#applied.close();
      throw new Error(`cannot read the import journal ${store.where}: ${(error as Error).message}`, { cause: error });
    }
    return journal;
  }

  /**
   * Takes every line `read` gives, from nothing, and answers what a rerun needs of them (the
   * requests still open, the last file applied at each target); null when they are that already
   * (as many lines). A store that can compact does so before every run, as a rewrite there is one
   * transaction, not a file written whole.
   */
  async #foldFrom(read: (each: (line: string) => void) => Promise<void>): Promise<Iterable<string> | null> {
    this.#reset();
    await read((raw) => this.#takeRaw(raw));
    const needed = this.#neededCount();
    if (needed === this.#lines) return null;
    this.#lines = needed;
    return (function* (lines) {
      for (const line of lines) yield JSON.stringify(line);
    })(this.#needed());
  }

  /** Forgets every line read. */
  #reset(): void {
    this.#requests.clear();
    this.#open.clear();
    this.#applied.clear();
    this.#lines = 0;
    this.#mark = undefined;
  }

  /**
   * The journal of the company that this consumer key names (the key is hashed; no secret is
   * involved), in `folder`. Default folder: `$XDG_STATE_HOME/wds-files` (`~/.local/state/wds-files`).
   */
  static open(consumerKey: string, folder = stateFolder()): ImportJournal {
    const id = createHash('sha256').update(consumerKey).digest('hex').slice(0, 16);
    return new ImportJournal(join(folder, `journal-${id}.jsonl`));
  }

  #load(): void {
    try {
      this.#mark = readJournal(this.path, (raw) => this.#takeRaw(raw)) ?? undefined;
    } catch (error) {
      throw new Error(`cannot read the import journal ${this.path}: ${(error as Error).message}`);
    }
  }

  #takeRaw(raw: string): void {
    if (!raw.trim()) return;
    this.#lines += 1;
    let line: Line;
    try {
      line = JSON.parse(raw) as Line;
    } catch {
      // A line cut by a crash or a full disk: what it would have said is resolved from the service.
      return;
    }
    this.#take(line);
  }

  #take(line: Line): void {
    if (line.t === 'send') {
      const { t: _t, ...request } = line;
      this.#requests.set(line.id, request);
      this.#open.add(line.id);
    } else if (line.t === 'task') {
      const request = this.#requests.get(line.id);
      if (request) request.task_id = line.task_id;
    } else if (line.t === 'end') {
      const request = this.#requests.get(line.id);
      if (!request) return;
      this.#open.delete(line.id);
      // What this journal's own requests applied (a request an earlier run left open is settled
      // here too, and kept) is in the file, not here (issue 46: an object a file applied, for a
      // run that never asks about them); a later run reads it there.
      if (line.id.startsWith(`${this.#run}-`) && !this.#memoryOnly) {
        this.#forgot = true;
        this.#requests.delete(line.id);
        return;
      }
      request.files.forEach((file, i) => {
        if (line.applied[i]) this.#applied.set(targetOf(request.kind, file), { sha256: file.sha256, at: request.at });
      });
      // Settled requests are not needed again: only what they applied is kept.
      this.#requests.delete(line.id);
    } else if (line.t === 'seen') {
      const applied = this.#applied.get(line.target);
      if (applied && applied.sha256 === line.sha256 && applied.updated_at !== line.updated_at) this.#applied.set(line.target, { ...applied, updated_at: line.updated_at });
    } else if (line.t === 'applied') {
      const { t: _t, target, ...applied } = line;
      this.#applied.set(target, applied);
    }
  }

  /** What a rerun needs of the journal read: the last file applied at each target, and the requests still open. */
  *#needed(): Generator<Line> {
    for (const [target, applied] of this.#applied.entries()) yield { t: 'applied', target, ...applied };
    for (const { task_id: taskId, ...request } of this.#requests.values()) {
      yield { t: 'send', ...request };
      if (taskId !== undefined) yield { t: 'task', id: request.id, task_id: taskId };
    }
  }

  /** How many lines {@link #needed} gives. */
  #neededCount(): number {
    let count = this.#applied.size;
    for (const request of this.#requests.values()) count += request.task_id === undefined ? 1 : 2;
    return count;
  }

  /**
   * Rewrites the journal as read to what is still needed, when at least half of it is not. Done
   * before this run's first line, so that its own requests are not yet in it; lines other runs
   * appended since are kept as they are. A journal that cannot be rewritten stays as it was.
   */
  #compact(): void {
    if (!this.#mark || this.#lines < COMPACT_FROM_LINES) return;
    const needed = this.#neededCount();
    if (this.#lines - needed < needed) return;
    replaceJournal(this.path, (function* (lines) {
      for (const line of lines) yield JSON.stringify(line);
    })(this.#needed()), this.#mark);
  }

  /**
   * Opened for each line (a run writes a few per request), so no handle outlives a run. A line
   * that cannot be written stops the run: no request is sent that the journal does not hold.
   * An array, not rest arguments: a large run's `seen` lines spread as arguments overflow V8's limit.
   */
  async #write(lines: Line[]): Promise<void> {
    if (!lines.length) return;
    if (this.#memoryOnly) {
      for (const line of lines) this.#take(line);
      return;
    }
    if (this.#store) await this.#store.append(lines.map((line) => JSON.stringify(line)));
    else {
      if (!this.#considered) {
        this.#considered = true;
        this.#compact();
      }
      appendLines(this.path, lines.map((line) => JSON.stringify(line)));
    }
    for (const line of lines) this.#take(line);
  }

  /**
   * @internal Reads the journal again when this process's own requests applied files since it was
   * read (they are kept only in the file): a journal passed to a second run knows them.
   */
  async freshen(): Promise<void> {
    if (!this.#forgot) return;
    this.#forgot = false;
    // Its lines read now are a finished run's: the next requests get ids of a new one.
    this.#run = randomUUID().slice(0, 8);
    this.#next = 0;
    this.#reset();
    if (this.#store) await this.#store.load((raw) => this.#takeRaw(raw), () => this.#reset());
    else this.#load();
  }

  /**
   * @internal From now on, what the run learns is kept in memory and nothing is written to the
   * file: a dry run reads the journal as the real run would, and leaves it as it was.
   */
  inMemoryOnly(): this {
    this.#memoryOnly = true;
    return this;
  }

  /** @internal Written before the request is sent; answers the request's id in the journal. */
  async sending(kind: JournalKind, route: JournalRoute, files: JournalFile[]): Promise<string> {
    const id = `${this.#run}-${this.#next++}`;
    await this.#write([{ t: 'send', id, kind, route, at: new Date().toISOString(), pid: process.pid, host: hostname(), proc: PROCESS_TOKEN, files }]);
    return id;
  }

  /** @internal The task the service answered for a request. */
  task(id: string, taskId: number): Promise<void> {
    return this.#write([{ t: 'task', id, task_id: taskId }]);
  }

  /** @internal Which of the request's files the service applied (in the order they were sent); `how` says how it is known. */
  settled(id: string, applied: boolean[], how: string): Promise<void> {
    return this.#write([{ t: 'end', id, applied, how }]);
  }

  /** @internal The `updated_at` a listing showed for a file this journal knows as applied. */
  seen(target: string, sha256: string, updatedAt: string): Promise<void> {
    return this.seenAll([{ target, sha256, updatedAt }]);
  }

  /** @internal {@link seen} for many files, written at once. */
  seenAll(files: { target: string; sha256: string; updatedAt: string }[]): Promise<void> {
    return this.#write(files.filter(({ target, sha256, updatedAt }) => {
      const known = this.#applied.get(target);
      if (known?.sha256 === sha256) return known.updated_at !== updatedAt;
      // Unknown here, or known with older bytes, yet perhaps applied by this process (kept only in
      // the file): a reader takes the line only where the file applied has these bytes.
      return this.#forgot;
    }).map(({ target, sha256, updatedAt }): Line => ({ t: 'seen', target, sha256, updated_at: updatedAt })));
  }

  /**
   * @internal {@link seenAll} for files this run applied itself (which the journal does not keep
   * in memory): each line is written.
   */
  seenOwn(files: { target: string; sha256: string; updatedAt: string }[]): Promise<void> {
    return this.#write(files.map(({ target, sha256, updatedAt }): Line => ({ t: 'seen', target, sha256, updated_at: updatedAt })));
  }

  /**
   * @internal Requests of this kind that an earlier run sent without learning what became of them,
   * leaving out those of a run still going on this host.
   */
  unsettled(kind: JournalKind): JournalRequest[] {
    const host = hostname();
    return [...this.#open]
      .map((id) => this.#requests.get(id)!)
      .filter((r) => r.kind === kind && !(r.host === host && alive(r.pid, r.proc)));
  }

  /** @internal The last file applied at this target by any run, if the journal knows one. */
  applied(target: string): AppliedFile | undefined {
    return this.#applied.get(target);
  }
}
