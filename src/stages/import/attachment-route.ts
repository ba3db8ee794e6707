/**
 * The dedupe and route stages of the attachment import, from the files' names and the listings
 * of the file parts involved (no bytes read): where each file goes (an export's manifest, the
 * export layout `attachments/<sheet>/<field>/<code>/<file>`, or `<code>/<file>` with a sheet and
 * field), the field confirmed as a file part, unknown members, a second file of one name for a
 * member, several files for a member's one file of a single-record sheet, and whether each file
 * adds (register) or replaces (update) as the mode allows (api-v2.md 4.4 Sheets 8).
 *
 * Two answers need a file's bytes, so they wait for its check: a name the service cannot take is
 * no conflict when the member already holds these very bytes under it (then skipped), and a file
 * whose bytes the journal knows applied is skipped.
 */
import type { WdsClient } from '../../client/client.js';
import type { SourceFile } from '../../sources/source.js';
import { extensionProblem } from './check/attachment-check.js';
import { SortedSpill } from '../../util/sorted-spill.js';
import { HeldFiles } from './held-files.js';
import { targetOf, type ImportJournal, type JournalFile } from './journal/journal.js';
import { alreadyApplied, appliedReason } from './journal/settle.js';
import { refuse, UNKNOWN_MEMBER_REASON } from './read.js';
import type { RunReport } from '../report.js';

/** `upsert` replaces a file of the same name or adds it; `add` only adds, `replace` only replaces. */
export type AttachmentImportMode = 'upsert' | 'add' | 'replace';

/** Files of one file part going in one kind of request. */
export interface AttachmentLane {
  sheetId: number;
  fieldId: number;
  route: 'register' | 'update';
}

/** A file with the place it goes to, as the plan keeps it on disk (no bytes, no handle). */
export interface PlacedFile {
  /** Where the file is (SourceFile.where). */
  where: string;
  /** Its path inside the source. */
  relPath: string;
  /** Its size as the source says. */
  size: number;
  code: string;
  fileName: string;
  sheetId: number;
  fieldId: number;
  /** Its order in the source. */
  order: number;
}

/** A placed file with what the names and listings say of it, as the plan keeps it. */
export interface RoutedRecord extends PlacedFile {
  /** The route of the lane it is sent in; null when it is not sent whatever its bytes. */
  route: AttachmentLane['route'] | null;
  /** Why it is not sent, when its route is null and its bytes do not make it a skip. */
  refusal?: string;
  /** Skipped if the member already holds these bytes under its name. */
  skipIfHeld: boolean;
  /** Skipped if the journal knows these bytes applied at its target. */
  skipIfApplied: boolean;
  /** Its member's files in its file part (a number per file part and member): batches keep them in order. */
  group: number;
  /** `updated_at` of the member's file of this name before anything is sent (the newest of several); null when it holds none. */
  before: string | null;
  /** When `skipIfHeld`: the download URLs of the member's files of this name, to compare bytes with. */
  held?: string[];
  /** Whether another file of the source has this name for this member too: a held file matches only one of them. */
  heldShared?: boolean;
}

/** A routed file found again in the source, on its way to its check. */
export interface RoutedFile {
  file: SourceFile;
  code: string;
  fileName: string;
  sheetId: number;
  fieldId: number;
  /** Its order in the source. */
  order: number;
  /** The lane it is sent in; null when it is not sent whatever its bytes. */
  lane: AttachmentLane | null;
  /** Why it is not sent, when its lane is null and its bytes do not make it a skip. */
  refusal: string | undefined;
  /** Skipped if the member already holds these bytes under its name. */
  skipIfHeld: boolean;
  /** Skipped if the journal knows these bytes applied at its target. */
  skipIfApplied: boolean;
  /** See {@link RoutedRecord}. */
  before: string | null;
  held: string[] | undefined;
  heldShared: boolean;
}

const LAYOUT_PATH = /^(?:.*\/)?attachments\/(\d+)\/(\d+)\/([^/]+)\/([^/]+)$/;

export interface PlaceDefaults {
  /** The sheet for a source laid out `<member code>/<file>`. */
  sheet?: number;
  /** The file part of `sheet`. */
  field?: number;
}

/** What says where a file goes: its path and name, and what its source says. */
type NamedFile = Pick<SourceFile, 'relPath' | 'fileName' | 'code' | 'sheetId' | 'fieldId'>;

/** Where a file goes: the source's own say, the export layout, or `<code>/<file>` with the sheet and field given. */
export function placeOf(file: NamedFile, given: PlaceDefaults): { sheetId: number; fieldId: number; code: string } | string {
  if (file.code !== undefined && file.sheetId !== undefined && file.fieldId !== undefined) {
    return { sheetId: file.sheetId, fieldId: file.fieldId, code: file.code };
  }
  const layout = LAYOUT_PATH.exec(file.relPath);
  if (given.sheet === undefined && layout) return { sheetId: Number(layout[1]), fieldId: Number(layout[2]), code: file.code ?? layout[3]! };
  if (given.sheet === undefined || given.field === undefined) {
    return 'the sheet and file part are unknown: use an export (attachments/<sheet>/<field>/<code>/<file>) or give --sheet and --field';
  }
  if (file.code !== undefined) return { sheetId: given.sheet, fieldId: given.field, code: file.code };
  const parts = file.relPath.split('/');
  if (parts.length < 2) return `the member is unknown: put the file in a folder named by the member code (<code>/${file.fileName}) or list it in a CSV`;
  return { sheetId: given.sheet, fieldId: given.field, code: parts[parts.length - 2]! };
}

/** The member a file goes to as far as its name or source says; '' when neither does. */
export function memberOfFile(file: NamedFile, given: PlaceDefaults): string {
  const place = placeOf(file, given);
  return typeof place === 'string' ? file.code ?? '' : place.code;
}

/** A file a member holds in a file part, as listed: its name, `updated_at` and download URL. */
type HeldRecord = [fileName: string, updatedAt: string, url: string];

/** Reads a sorted spill forward, for lookups by keys that come in order. */
class Cursor<T> {
  readonly #source: AsyncIterator<[string, T]>;
  #head: IteratorResult<[string, T]> | undefined;

  constructor(spill: SortedSpill<T>) {
    this.#source = spill.sorted()[Symbol.asyncIterator]();
  }

  /** Every value under `key`; keys asked for must not go down. */
  async at(key: string): Promise<T[]> {
    this.#head ??= await this.#source.next();
    while (!this.#head.done && this.#head.value[0] < key) this.#head = await this.#source.next();
    const found: T[] = [];
    while (!this.#head.done && this.#head.value[0] === key) {
      found.push(this.#head.value[1]);
      this.#head = await this.#source.next();
    }
    return found;
  }

  async close(): Promise<void> {
    await this.#source.return?.(undefined);
  }
}

/** Values a sorted spill of listing entries holds in memory before it writes a run (entries with URLs are large). */
const LISTING_RUN = 2048;
const LISTING_READ_BYTES = 16 * 1024;

export class AttachmentRouting {
  /**
   * The listings, sorted by member code on disk (a company's members and files grow together):
   * the members, and each file part's files by member. Read forward as the plan's groups come,
   * file part by file part and member by member.
   */
  #members: SortedSpill<null> | null = null;
  readonly #held = new Map<string, SortedSpill<HeldRecord[]>>();
  #reading: { part: string; members: Cursor<null>; held: Cursor<HeldRecord[]> } | null = null;
  readonly #heldFiles = new HeldFiles();
  readonly #lanes = new Map<string, AttachmentLane>();

  private constructor(
    private readonly client: WdsClient,
    /** Which sheet fields are file parts, and whether their sheet holds several records. */
    private readonly fileParts: Map<string, { multi: boolean }>,
    private readonly journal: ImportJournal | undefined,
  ) {}

  /** The layouts: which fields are file parts. */
  static async layouts(client: WdsClient, journal: ImportJournal | undefined, signal?: AbortSignal): Promise<AttachmentRouting> {
    const fileParts = new Map<string, { multi: boolean }>();
    for (const l of await client.sheets.layouts({ signal })) {
      for (const f of l.custom_fields) if (f.type_detail === 'attach_file') fileParts.set(`${l.id}:${f.id}`, { multi: l.record_type === 1 });
    }
    return new AttachmentRouting(client, fileParts, journal);
  }

  /** Whether a file part's field is one (from the layouts). */
  isFilePart(sheetId: number, fieldId: number): boolean {
    return this.fileParts.has(`${sheetId}:${fieldId}`);
  }

  /**
   * One listing of members, and one of each file part the files go to (`sheet:field`), each read
   * entry by entry into a sorted spill; `signal` stops them. Call {@link close} after.
   */
  async list(parts: Iterable<string>, signal?: AbortSignal): Promise<void> {
    const members = (this.#members = new SortedSpill<null>(4 * LISTING_RUN, LISTING_READ_BYTES));
    // A member read twice (a listing cut short and read again) is still one member.
    await this.client.members.each((m) => members.addNow(m.code, null), { signal });
    for (const part of parts) {
      if (!this.fileParts.has(part)) continue;
      const [sheetId, fieldId] = part.split(':').map(Number) as [number, number];
      let held: SortedSpill<HeldRecord[]> | undefined;
      await this.client.attachments.each(sheetId, fieldId, (m) => held!.addNow(m.code, m.records.map((r) => [r.file_name, r.updated_at, r.download_url])), {
        signal,
        // A listing cut short and read again hands its entries over again from the first.
        start: () => {
          held?.close();
          this.#held.set(part, (held = new SortedSpill<HeldRecord[]>(LISTING_RUN, LISTING_READ_BYTES)));
        },
      });
    }
  }

  /** Whether `code` is a member, and the files it holds in `part`; parts and codes must come in sorted order. */
  async #listingOf(part: string, code: string): Promise<{ member: boolean; records: HeldRecord[] }> {
    if (this.#reading?.part !== part) {
      await this.#closeReading();
      const held = this.#held.get(part) ?? new SortedSpill<HeldRecord[]>();
      this.#reading = { part, members: new Cursor(this.#members!), held: new Cursor(held) };
    }
    const member = (await this.#reading.members.at(code)).length > 0;
    return { member, records: (await this.#reading.held.at(code)).flat() };
  }

  async #closeReading(): Promise<void> {
    const reading = this.#reading;
    this.#reading = null;
    if (reading) await Promise.all([reading.members.close(), reading.held.close()]);
  }

  /** Removes the listings' temporary files (safe to call twice). */
  async close(): Promise<void> {
    await this.#closeReading();
    this.#members?.close();
    for (const held of this.#held.values()) held.close();
    this.#held.clear();
  }

  /**
   * The dedupe and route stages for one member's files in one file part, sorted by name and then
   * source order: each file's route, or why it is not sent, handed to `routed`. Refusals that no
   * bytes can change are reported here; the others wait for the check. `group` numbers the
   * member's files. Groups come sorted by file part (`sheet:field`) and member code, as the
   * listings are read forward.
   */
  async routeGroup(files: PlacedFile[], group: number, mode: AttachmentImportMode, report: RunReport, routed: (file: RoutedRecord) => void): Promise<void> {
    const first = files[0];
    if (!first) return;
    const part = `${first.sheetId}:${first.fieldId}`;
    const where = `sheet ${first.sheetId} field ${first.fieldId}`;
    if (!this.fileParts.has(part)) {
      for (const item of files) refuse(report, item, item.code, 'invalid', `custom field ${item.fieldId} of sheet ${item.sheetId} is not a file part (see the sheet layouts)`);
      return;
    }
    const { multi } = this.fileParts.get(part)!;
    const code = first.code;
    const listing = await this.#listingOf(part, code);
    if (!listing.member) {
      for (const item of files) refuse(report, item, code, 'invalid', `${UNKNOWN_MEMBER_REASON} ${code}`);
      return;
    }
    // A single-record slot given more than one file: none goes, as for two photos of one member
    // (which one the member should hold is the user's choice). Names off the extension list are
    // left out, being refused whatever else comes.
    const rivals = multi ? [] : [...files].filter((f) => !extensionProblem(f.fileName)).sort((a, b) => a.order - b.order);
    if (rivals.length > 1) {
      const list = rivals.map((f) => f.where).join(', ');
      for (const item of files) refuse(report, item, code, 'conflict', `${rivals.length} files are for member ${code} in the single-record ${where}, which holds one file (${list}); keep one`);
      return;
    }
    const names = listing.records.map(([name]) => name);
    let repeats = 0;
    let previous: string | undefined;
    for (const [at, item] of files.entries()) {
      const sameName = listing.records.filter(([name]) => name === item.fileName);
      const same = sameName.length;
      repeats = item.fileName === previous ? repeats + 1 : 1;
      previous = item.fileName;
      // Where the service cannot take this name (several records hold it, it comes twice, or add
      // mode), a file whose bytes it already holds under the name needs no request.
      const skipIfHeld = (same > 1 || repeats > 1 || (same > 0 && mode === 'add')) && same > 0;
      const skipIfApplied = this.journal !== undefined && same === 1 && repeats === 1
        && this.journal.applied(targetOf('attachment', this.journalFile(item))) !== undefined;
      const decided = (route: AttachmentLane['route'] | null, refusal?: string): void => {
        if (!route && !skipIfHeld && !skipIfApplied) {
          refuse(report, item, code, 'conflict', refusal!);
          return;
        }
        const before = sameName.reduce<string | null>((newest, [, updatedAt]) => (newest === null || updatedAt > newest ? updatedAt : newest), null);
        const heldShared = repeats > 1 || files[at + 1]?.fileName === item.fileName;
        routed({
          where: item.where, relPath: item.relPath, size: item.size, code, fileName: item.fileName, sheetId: item.sheetId, fieldId: item.fieldId, order: item.order,
          route, refusal, skipIfHeld, skipIfApplied, group, before,
          ...(skipIfHeld ? { held: sameName.map(([, , url]) => url), heldShared } : {}),
        });
      };
      if (repeats > 1) {
        decided(null, `a second file named "${item.fileName}" for member ${code} in ${where}: the service refuses a name the member already holds in this file part, and cannot tell two files of one name apart to replace one`);
        continue;
      }
      const wantsUpdate = mode === 'replace' || (mode === 'upsert' && same > 0);
      if (wantsUpdate) {
        if (same === 0) decided(null, `member ${code} holds no file named "${item.fileName}" in ${where}; replace needs one (use --mode add or upsert)`);
        else if (same > 1) decided(null, `member ${code} holds ${same} records with a file named "${item.fileName}" in ${where}; the service cannot replace one of several files of the same name`);
        else decided('update');
        continue;
      }
      if (same > 0) decided(null, `member ${code} already holds a file named "${item.fileName}" in ${where}; names must not repeat (use --mode replace or upsert)`);
      else if (!multi && names.length > 0) decided(null, `member ${code} already holds "${names[0]}" in the single-record ${where}; only a file of the same name can replace it`);
      else decided('register');
    }
  }

  /** A routed file found again in the source, with its lane object; null when the source no longer holds it. */
  routedFile(record: RoutedRecord, file: SourceFile): RoutedFile {
    return {
      file, code: record.code, fileName: record.fileName, sheetId: record.sheetId, fieldId: record.fieldId, order: record.order,
      lane: record.route ? this.#lane(record, record.route) : null, refusal: record.refusal, skipIfHeld: record.skipIfHeld, skipIfApplied: record.skipIfApplied,
      before: record.before, held: record.held, heldShared: record.heldShared ?? false,
    };
  }

  /** The one lane object of a file part and route, shared by its files. */
  #lane(item: Pick<PlacedFile, 'sheetId' | 'fieldId'>, route: AttachmentLane['route']): AttachmentLane {
    const key = `${item.sheetId}:${item.fieldId}:${route}`;
    let lane = this.#lanes.get(key);
    if (!lane) this.#lanes.set(key, (lane = { sheetId: item.sheetId, fieldId: item.fieldId, route }));
    return lane;
  }

  /**
   * After the check: why a file whose bytes are now known needs no request (the member holds
   * them under its name, or an earlier run applied them), or null.
   */
  async skipReason(file: RoutedFile, sha256: string): Promise<string | null> {
    const where = `sheet ${file.sheetId} field ${file.fieldId}`;
    if (file.skipIfHeld && (await this.#heldFiles.holdsSame(file.held ?? [], sha256, file.heldShared))) {
      return `member ${file.code} already holds these bytes as "${file.fileName}" in ${where}; nothing to send`;
    }
    const listed = { get: (): string | undefined => file.before ?? undefined };
    const earlier = file.skipIfApplied && this.journal ? alreadyApplied(this.journal, 'attachment', { ...this.journalFile(file), sha256 }, listed) : null;
    if (earlier) {
      return appliedReason(`as "${file.fileName}" of member ${file.code} in ${where}`, earlier);
    }
    return null;
  }

  /** A file as the journal knows it, less its bytes' hash. */
  journalFile(f: Pick<PlacedFile, 'code' | 'sheetId' | 'fieldId' | 'fileName'>): Omit<JournalFile, 'before' | 'sha256'> {
    return { code: f.code, sheet_id: f.sheetId, custom_field_id: f.fieldId, file_name: f.fileName };
  }
}
