/**
 * Lists download URLs of photos or attachments, and lists them again when they expire (issue 4).
 * Every URL carries its deadline: `Expires=` when present, else listing time plus 15 minutes,
 * placed on our clock through the answer's `Date` header (the service's clock may differ), minus a
 * safety margin. `refresh` re-lists one target with one API call, shared by every download that
 * asks at the same time.
 */
import type { WdsClient } from '../../client/client.js';
import { DOWNLOAD_URL_LIFETIME_SECONDS } from '../../spec/limits.js';
import { ItemSpill } from '../report-spill.js';

export type FileKind = 'photo' | 'attachment';

/** One file of the service, as the listing shows it. */
export interface RemoteFile {
  /** Identity of the file across listings and runs. */
  key: string;
  kind: FileKind;
  code: string;
  sheet_id: number | null;
  custom_field_id: number | null;
  /** Attachments: the position among the member's records that hold a file in that field. */
  record_index: number | null;
  file_name: string;
  updated_at: string;
  url: string;
  /** Our clock (epoch ms) after which the URL is not to be used. */
  deadline: number;
  /** Which listing it came from, for refresh, and when (our clock). */
  target: string;
  listedAt: number;
}

export interface ListTarget {
  id: string;
  kind: FileKind;
  sheetId?: number;
  fieldId?: number;
}

/**
 * The `Expires=` query parameter, read without a URL parser: a listing has a URL per file, and a
 * parser per URL is a cost every run's start pays (bench/notes.md, "Reading Expires").
 */
const EXPIRES = /(?:^|&)Expires=(\d+)(?:&|$)/;
/** Targets listed at once by `listAll`. */
const LISTINGS_AT_ONCE = 4;

/** The query of `url`: after the first `?`, before any `#`. */
function queryOf(url: string): string {
  const hash = url.indexOf('#');
  const base = hash < 0 ? url : url.slice(0, hash);
  const question = base.indexOf('?');
  return question < 0 ? '' : base.slice(question + 1);
}

/** Safety margin before a URL's deadline: 5 % of its lifetime, at least 2 s, at most 60 s. */
export function deadlineOf(url: string, listedAt: number, serviceNowAtListing: number | undefined): number {
  const lifetime = DOWNLOAD_URL_LIFETIME_SECONDS * 1000;
  let expiresOurClock = listedAt + lifetime;
  const expires = Number(EXPIRES.exec(queryOf(url))?.[1]);
  if (Number.isFinite(expires) && expires > 0) {
    const serviceNow = serviceNowAtListing ?? listedAt;
    expiresOurClock = listedAt + (expires * 1000 - serviceNow);
  }
  const remaining = expiresOurClock - listedAt;
  const margin = Math.min(60_000, Math.max(2_000, remaining * 0.05));
  return expiresOurClock - margin;
}

export const photoKey = (code: string): string => `photo:${code}`;
export const attachmentKey = (sheetId: number, fieldId: number, code: string, recordIndex: number, fileName: string): string =>
  `attachment:${sheetId}:${fieldId}:${code}:${recordIndex}:${fileName}`;

export class UrlLister {
  /** How many times a target was listed again after the first time. */
  relists = 0;
  private readonly inFlight = new Map<string, Promise<Relisting>>();
  private readonly latest = new Map<string, Relisting>();

  constructor(
    private readonly client: WdsClient,
    readonly targets: ListTarget[],
    private readonly since?: string,
    /**
     * Stops every listing under way and each wait for the limits or a retry: a run stopped while
     * the service lists (or while it waits out a 429 of up to 40 minutes) ends at once.
     */
    private readonly signal?: AbortSignal,
  ) {}

  /** The first listing of every target, in memory; `onListed` is given each target's files as they come. */
  async listAll(onListed?: (files: Iterable<RemoteFile>) => void): Promise<RemoteFile[]> {
    const listed = await this.listEvery(() => new FileList(null), onListed);
    const out: RemoteFile[] = [];
    for (const files of listed) out.push(...files);
    return out;
  }

  /**
   * The first listing of every target kept in a temporary file, not in memory (`ListedFiles`):
   * an export of 200,000 files would otherwise hold each one with its URL until it is downloaded.
   * `onListed` is given each target's files as they come.
   */
  async listToDisk(onListed?: (files: Iterable<RemoteFile>) => void): Promise<ListedFiles> {
    const lists: FileList[] = [];
    try {
      await this.listEvery(() => {
        const list = FileList.onDisk(this);
        lists.push(list);
        return list;
      }, onListed);
    } catch (error) {
      for (const list of lists) list.close();
      throw error;
    }
    return new ListedFiles(lists);
  }

  /** Every target listed into a list made by `make`, in the targets' order. */
  private async listEvery(make: () => FileList, onListed?: (files: Iterable<RemoteFile>) => void): Promise<FileList[]> {
    // A few targets at a time: each listing is one request whose answer the service takes a while
    // to make, and the files keep the targets' order.
    const listed: FileList[] = [];
    let next = 0;
    let failed = false;
    const lane = async (): Promise<void> => {
      while (next < this.targets.length && !failed) {
        const at = next++;
        try {
          listed[at] = await this.listTarget(this.targets[at]!, make);
          onListed?.(listed[at]!);
        } catch (error) {
          // The run fails with the first error: no further listing is asked for.
          failed = true;
          throw error;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(LISTINGS_AT_ONCE, this.targets.length) }, lane));
    return listed;
  }

  /**
   * `key`'s file in a listing of its target newer than `listedBefore` (the one another download
   * asked for, or a fresh one; concurrent callers share one API call). Undefined when the listing
   * does not have it: the file no longer exists on the service.
   */
  async refresh(targetId: string, listedBefore: number, key: string): Promise<RemoteFile | undefined> {
    return (await this.relisting(targetId, listedBefore)).find(key);
  }

  private relisting(targetId: string, listedBefore: number): Promise<Relisting> {
    const pending = this.inFlight.get(targetId);
    if (pending) return pending;
    // A listing newer than the URL that failed is fresh enough: another download refreshed it.
    const known = this.latest.get(targetId);
    if (known && known.listedAt > listedBefore) return Promise.resolve(known);
    const target = this.targets.find((t) => t.id === targetId);
    if (!target) throw new Error(`unknown listing target ${targetId}`);
    // Kept in a temporary file, as the first listing is: once URLs expire, every file still to
    // come is looked up in it. A listing replaced is not closed, as a lookup may still be on its
    // way to it; its file is closed when nothing refers to it any more.
    const owner = {};
    const run = this.listTarget(target, () => FileList.onDisk(owner))
      .then((list) => {
        const relisting = new Relisting(list, owner);
        this.relists += 1;
        this.latest.set(target.id, relisting);
        return relisting;
      })
      .finally(() => this.inFlight.delete(targetId));
    this.inFlight.set(targetId, run);
    return run;
  }

  private async listTarget(target: ListTarget, make: () => FileList): Promise<FileList> {
    const listedAt = Date.now();
    let serviceNow: number | undefined;
    // The answer is read entry by entry (client `each`), never held whole beside its files; each
    // file gets its deadline from the answer's Date header, which comes before its entries.
    let files: FileList | null = null;
    const start = (headers: Record<string, string | string[] | undefined>): void => {
      const date = Date.parse(String(headers.date ?? ''));
      // The Date header has whole seconds: half a second is the expected error.
      serviceNow = Number.isNaN(date) ? undefined : date + 500;
      // A read cut short and asked for again lists from the first entry: the list starts over.
      files?.close();
      files = make();
      files.listedAt = listedAt;
    };
    const add = (file: RemoteFile): void => {
      file.deadline = deadlineOf(file.url, listedAt, serviceNow);
      files!.add(file);
    };
    const options = { updatedSince: this.since, signal: this.signal, start };
    if (target.kind === 'photo') {
      await this.client.faceImages.each((e) => {
        const file: RemoteFile = {
          key: photoKey(e.code), kind: 'photo', code: e.code, sheet_id: null, custom_field_id: null, record_index: null,
          file_name: e.file_name, updated_at: e.updated_at, url: e.download_url, deadline: 0, target: target.id, listedAt,
        };
        add(file);
      }, options);
    } else {
      const sheetId = target.sheetId!;
      const fieldId = target.fieldId!;
      await this.client.attachments.each(sheetId, fieldId, (member) => {
        member.records.forEach((r, index) => {
          const file: RemoteFile = {
            key: attachmentKey(sheetId, fieldId, member.code, index, r.file_name), kind: 'attachment', code: member.code,
            sheet_id: sheetId, custom_field_id: fieldId, record_index: index, file_name: r.file_name,
            updated_at: r.updated_at, url: r.download_url, deadline: 0, target: target.id, listedAt,
          };
          add(file);
        });
      }, options);
    }
    // An answer of another type than JSON (none of the service's) gives no entries and no start.
    return (files ?? (start({}), files!)) as FileList;
  }
}

/** A sheet or file part named with --sheet/--field that the layouts do not have. */
export class UnknownTargetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnknownTargetError';
  }
}

/** Which sheets and file parts an attachment export takes. */
export interface AttachmentScope {
  /** Only these sheets. Default: every sheet with a file part. */
  sheets?: number[];
  /** One sheet (the CLI's --sheet); `sheets` when both are given. */
  sheet?: number;
  /** Only this file part (of the one sheet named, when one is). */
  field?: number;
  /** Stops the request for the sheets' layouts. */
  signal?: AbortSignal;
}

/**
 * The attachment targets: every file part of every sheet, or of the sheets named. A sheet named
 * that does not exist or has no file part, or a field named that is not a file part of its sheet,
 * is an error naming what there is: an export of nothing is never what was asked for.
 */
export async function attachmentTargets(client: WdsClient, only: AttachmentScope = {}): Promise<ListTarget[]> {
  const sheets = only.sheets ?? (only.sheet !== undefined ? [only.sheet] : undefined);
  if (only.field !== undefined && sheets !== undefined && sheets.length > 1) {
    throw new UnknownTargetError(`field ${only.field} is a file part of one sheet, and ${sheets.length} sheets are named (${sheets.join(', ')}): name its sheet alone`);
  }
  const layouts = await client.sheets.layouts({ signal: only.signal });
  const targets: ListTarget[] = [];
  const fileParts = (layout: (typeof layouts)[number]) => layout.custom_fields.filter((field) => field.type_detail === 'attach_file');
  const list = (items: { id: number; name: string }[]): string => items.map((i) => `${i.id} (${i.name})`).join(', ') || 'none';
  for (const layout of layouts) {
    if (sheets !== undefined && !sheets.includes(layout.id)) continue;
    for (const field of fileParts(layout)) {
      if (only.field !== undefined && field.id !== only.field) continue;
      targets.push({ id: `attachments:${layout.id}:${field.id}`, kind: 'attachment', sheetId: layout.id, fieldId: field.id });
    }
  }
  for (const sheet of sheets ?? []) {
    if (targets.some((target) => target.sheetId === sheet)) continue;
    const layout = layouts.find((l) => l.id === sheet);
    const withFiles = layouts.filter((l) => fileParts(l).length > 0);
    if (!layout) throw new UnknownTargetError(`there is no sheet ${sheet}; sheets with file parts: ${list(withFiles)}`);
    if (only.field === undefined) throw new UnknownTargetError(`sheet ${layout.id} (${layout.name}) has no file part; sheets with file parts: ${list(withFiles)}`);
    throw new UnknownTargetError(`field ${only.field} is not a file part of sheet ${layout.id} (${layout.name}); its file parts: ${list(fileParts(layout))}`);
  }
  return targets;
}

/**
 * One target's files as listed: in memory, or in a temporary file (ItemSpill) once `onDisk` made
 * it so, written a part at a time. Should the temporary folder refuse them, they stay in memory.
 */
export class FileList implements Iterable<RemoteFile> {
  /** When the listing was asked for (our clock). */
  listedAt = 0;
  private held: RemoteFile[] = [];
  private count = 0;
  private spilling = true;

  constructor(private spill: ItemSpill<RemoteFile> | null) {}

  /** A list kept in a temporary file; `owner` closes it when collected, should `close` not be called. */
  static onDisk(owner: object): FileList {
    try {
      return new FileList(ItemSpill.create<RemoteFile>(owner));
    } catch {
      return new FileList(null);
    }
  }

  get length(): number {
    return this.count;
  }

  add(file: RemoteFile): void {
    this.held.push(file);
    this.count += 1;
    if (this.spill && this.spilling && this.held.length >= FILES_PER_PART) this.flush();
  }

  private flush(): void {
    try {
      this.spill!.append(this.held);
      this.held = [];
    } catch {
      // The temporary folder is full or unwritable: what it holds is read back, the rest stays here.
      this.spilling = false;
    }
  }

  *[Symbol.iterator](): Iterator<RemoteFile> {
    if (this.spill) yield* this.spill.read();
    yield* this.held;
  }

  /** Frees the temporary file; the list is empty from then on. */
  close(): void {
    this.spill?.close();
    this.spill = null;
    this.held = [];
    this.count = 0;
  }
}

/** Files read ahead of the one looked up in a listing asked for again, kept for the lookups that follow. */
const RELISTED_AHEAD = 2_048;

/**
 * A target listed again after URLs expired, looked up by key. Downloads ask for their files in
 * about the order of the listing, so a lookup reads on from where the last one stopped, keeping the
 * last files it read for the downloads running beside it; a file not found that way is looked for
 * once more from the start. Memory holds those few files, not the listing.
 */
class Relisting {
  private readonly window = new Map<string, RemoteFile>();
  private reader: Iterator<RemoteFile> | null = null;

  /** @param owner The object whose collection closes the list's temporary file: held here for that. */
  constructor(private readonly list: FileList, readonly owner: object) {}

  get listedAt(): number {
    return this.list.listedAt;
  }

  find(key: string): RemoteFile | undefined {
    const held = this.window.get(key);
    if (held) return held;
    // A read that started at the first file has seen them all when it reaches the end.
    const fromFirst = this.reader === null;
    return this.readOn(key) ?? (fromFirst ? undefined : this.readOn(key));
  }

  /** Reads on until `key`'s file; at the end of the list, the next read starts from the first again. */
  private readOn(key: string): RemoteFile | undefined {
    this.reader ??= this.list[Symbol.iterator]();
    for (let next = this.reader.next(); !next.done; next = this.reader.next()) {
      this.keep(next.value);
      if (next.value.key === key) return next.value;
    }
    this.reader = null;
    return undefined;
  }

  private keep(file: RemoteFile): void {
    this.window.delete(file.key);
    this.window.set(file.key, file);
    if (this.window.size > RELISTED_AHEAD) this.window.delete(this.window.keys().next().value!);
  }
}

/** Files written to a list's temporary file at a time. */
const FILES_PER_PART = 512;

/** Every target's files, in the targets' order, read from their temporary files each time they are gone through. */
export class ListedFiles implements Iterable<RemoteFile> {
  constructor(private lists: FileList[]) {}

  get length(): number {
    return this.lists.reduce((n, list) => n + list.length, 0);
  }

  *[Symbol.iterator](): Iterator<RemoteFile> {
    for (const list of this.lists) yield* list;
  }

  /** Frees the temporary files. */
  close(): void {
    for (const list of this.lists) list.close();
    this.lists = [];
  }
}
