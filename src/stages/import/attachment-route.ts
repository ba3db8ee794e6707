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

/** A file with the place it goes to. */
export interface PlacedFile {
  file: SourceFile;
  code: string;
  fileName: string;
  sheetId: number;
  fieldId: number;
  /** Its order in the source. */
  order: number;
}

/** A placed file with what the names and listings say of it. */
export interface RoutedFile extends PlacedFile {
  /** The lane it is sent in; null when it is not sent whatever its bytes. */
  lane: AttachmentLane | null;
  /** Why it is not sent, when its lane is null and its bytes do not make it a skip. */
  refusal: string | undefined;
  /** Skipped if the member already holds these bytes under its name. */
  skipIfHeld: boolean;
  /** Skipped if the journal knows these bytes applied at its target. */
  skipIfApplied: boolean;
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
function placeOf(file: NamedFile, given: PlaceDefaults): { sheetId: number; fieldId: number; code: string } | string {
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

/** A file part's listing: the names each member holds, their bytes on demand, and `updated_at` by journal target. */
interface PartListing {
  multi: boolean;
  held: Map<string, string[]>;
  heldFiles: HeldFiles;
}

export class AttachmentRouting {
  readonly #parts = new Map<string, PartListing>();
  /** `updated_at` of every file of the parts involved before anything is sent, keyed by journal target. */
  readonly listed = new Map<string, string>();
  #members = new Set<string>();
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

  /** Where each file goes; a file of no known place or a field that is no file part is refused. */
  place(files: SourceFile[], given: PlaceDefaults, report: RunReport): PlacedFile[] {
    const placed: PlacedFile[] = [];
    files.forEach((file, order) => {
      const place = placeOf(file, given);
      if (typeof place === 'string') {
        refuse(report, file, file.code ?? '', 'invalid', place);
      } else if (!this.fileParts.has(`${place.sheetId}:${place.fieldId}`)) {
        refuse(report, file, place.code, 'invalid', `custom field ${place.fieldId} of sheet ${place.sheetId} is not a file part (see the sheet layouts)`);
      } else placed.push({ file, code: place.code, fileName: file.fileName, sheetId: place.sheetId, fieldId: place.fieldId, order });
    });
    return placed;
  }

  /** One listing of members, and one of each file part the files go to; `signal` stops them. */
  async list(files: PlacedFile[], signal?: AbortSignal): Promise<void> {
    // Only the codes are kept: the listing is read entry by entry, not held whole.
    const members = new Set<string>();
    await this.client.members.each((m) => members.add(m.code), { signal });
    this.#members = members;
    for (const part of new Set(files.map((f) => `${f.sheetId}:${f.fieldId}`))) {
      const [sheetId, fieldId] = part.split(':').map(Number) as [number, number];
      const listing = await this.client.attachments.list(sheetId, fieldId, { signal });
      const held = new Map<string, string[]>();
      for (const m of listing) {
        held.set(m.code, m.records.map((r) => r.file_name));
        for (const r of m.records) {
          const key = targetOf('attachment', { code: m.code, sheet_id: sheetId, custom_field_id: fieldId, file_name: r.file_name });
          if (!this.listed.has(key) || r.updated_at > this.listed.get(key)!) this.listed.set(key, r.updated_at);
        }
      }
      this.#parts.set(part, { multi: this.fileParts.get(part)!.multi, held, heldFiles: new HeldFiles(new Map(listing.map((m) => [m.code, m.records]))) });
    }
  }

  /**
   * The dedupe and route stages, part by part in source order: each file's lane, or why it is not
   * sent. Refusals that no bytes can change are reported here; the others wait for the check.
   */
  route(files: PlacedFile[], mode: AttachmentImportMode, report: RunReport): RoutedFile[] {
    const routed: RoutedFile[] = [];
    const sourceNames = new Map<string, number>();
    const crowded = this.crowdedSlots(files);
    for (const item of files) {
      const part = `${item.sheetId}:${item.fieldId}`;
      const { multi, held } = this.#parts.get(part)!;
      const where = `sheet ${item.sheetId} field ${item.fieldId}`;
      if (!this.#members.has(item.code)) {
        refuse(report, item.file, item.code, 'invalid', `${UNKNOWN_MEMBER_REASON} ${item.code}`);
        continue;
      }
      const names = held.get(item.code) ?? [];
      const same = names.filter((n) => n === item.fileName).length;
      const key = `${part}\u0000${item.code}\u0000${item.fileName}`;
      const repeats = (sourceNames.get(key) ?? 0) + 1;
      sourceNames.set(key, repeats);
      const rivals = crowded.get(`${part}\u0000${item.code}`);
      if (rivals) {
        const list = rivals.map((f) => f.file.where).join(', ');
        refuse(report, item.file, item.code, 'conflict', `${rivals.length} files are for member ${item.code} in the single-record ${where}, which holds one file (${list}); keep one`);
        continue;
      }
      // Where the service cannot take this name (several records hold it, it comes twice, or add
      // mode), a file whose bytes it already holds under the name needs no request.
      const skipIfHeld = (same > 1 || repeats > 1 || (same > 0 && mode === 'add')) && same > 0;
      const skipIfApplied = this.journal !== undefined && same === 1 && repeats === 1
        && this.journal.applied(targetOf('attachment', this.journalFile(item))) !== undefined;
      // Every field written out, not spread: a spread copy of each file took a hidden class of its
      // own (about 300 bytes a file, found in a heap snapshot of 8,000 files).
      const decided = (lane: AttachmentLane | null, refusal?: string): void => {
        routed.push({
          file: item.file, code: item.code, fileName: item.fileName, sheetId: item.sheetId, fieldId: item.fieldId, order: item.order,
          lane, refusal, skipIfHeld, skipIfApplied,
        });
      };
      if (repeats > 1) {
        decided(null, `a second file named "${item.fileName}" for member ${item.code} in ${where}: the service refuses a name the member already holds in this file part, and cannot tell two files of one name apart to replace one`);
        continue;
      }
      const wantsUpdate = mode === 'replace' || (mode === 'upsert' && same > 0);
      if (wantsUpdate) {
        if (same === 0) decided(null, `member ${item.code} holds no file named "${item.fileName}" in ${where}; replace needs one (use --mode add or upsert)`);
        else if (same > 1) decided(null, `member ${item.code} holds ${same} records with a file named "${item.fileName}" in ${where}; the service cannot replace one of several files of the same name`);
        else decided(this.#lane(item, 'update'));
        continue;
      }
      if (same > 0) decided(null, `member ${item.code} already holds a file named "${item.fileName}" in ${where}; names must not repeat (use --mode replace or upsert)`);
      else if (!multi && names.length > 0) decided(null, `member ${item.code} already holds "${names[0]}" in the single-record ${where}; only a file of the same name can replace it`);
      else decided(this.#lane(item, 'register'));
    }
    return routed.filter((file) => {
      if (file.lane || file.skipIfHeld || file.skipIfApplied) return true;
      refuse(report, file.file, file.code, 'conflict', file.refusal!);
      return false;
    });
  }

  /** The one lane object of a file part and route, shared by its files. */
  #lane(item: PlacedFile, route: AttachmentLane['route']): AttachmentLane {
    const key = `${item.sheetId}:${item.fieldId}:${route}`;
    let lane = this.#lanes.get(key);
    if (!lane) this.#lanes.set(key, (lane = { sheetId: item.sheetId, fieldId: item.fieldId, route }));
    return lane;
  }

  /**
   * The files of each single-record slot (file part and member) given more than one. None of them
   * goes: which one the member should hold is the user's choice, as for two photos of one member.
   * Names off the extension list are left out, being refused whatever else comes.
   */
  private crowdedSlots(files: PlacedFile[]): Map<string, PlacedFile[]> {
    const slots = new Map<string, PlacedFile[]>();
    for (const item of files) {
      const part = `${item.sheetId}:${item.fieldId}`;
      if (this.#parts.get(part)!.multi || !this.#members.has(item.code) || extensionProblem(item.fileName)) continue;
      const slot = `${part}\u0000${item.code}`;
      const same = slots.get(slot);
      if (same) same.push(item);
      else slots.set(slot, [item]);
    }
    return new Map([...slots].filter(([, same]) => same.length > 1));
  }

  /**
   * After the check: why a file whose bytes are now known needs no request (the member holds
   * them under its name, or an earlier run applied them), or null.
   */
  async skipReason(file: RoutedFile, sha256: string): Promise<string | null> {
    const where = `sheet ${file.sheetId} field ${file.fieldId}`;
    if (file.skipIfHeld && (await this.#parts.get(`${file.sheetId}:${file.fieldId}`)!.heldFiles.holdsSame(file.code, file.fileName, sha256))) {
      return `member ${file.code} already holds these bytes as "${file.fileName}" in ${where}; nothing to send`;
    }
    const earlier = file.skipIfApplied && this.journal ? alreadyApplied(this.journal, 'attachment', { ...this.journalFile(file), sha256 }, this.listed) : null;
    if (earlier) {
      return appliedReason(`as "${file.fileName}" of member ${file.code} in ${where}`, earlier);
    }
    return null;
  }

  /** A file as the journal knows it, less its bytes' hash. */
  journalFile(f: PlacedFile): Omit<JournalFile, 'before' | 'sha256'> {
    return { code: f.code, sheet_id: f.sheetId, custom_field_id: f.fieldId, file_name: f.fileName };
  }
}
