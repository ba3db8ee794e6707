/**
 * The dedupe and route stages of the photo import, from the files' names and one listing (no
 * bytes read): a name with an extension outside the list is refused, two files for one member are
 * a conflict, a code no member has is refused, and each photo goes to register (a member without a
 * photo) or update (a member with one) as the mode allows. Whether the journal knows a file's very
 * bytes as applied needs its sha256, so that is settled after the check
 * ({@link PhotoRouting.appliedBefore}).
 */
import type { WdsClient } from '../../client/client.js';
import type { SourceFile } from '../../sources/source.js';
import { PHOTO_EXTENSIONS, extensionOf, isPhotoExtension } from '../../spec/extensions.js';
import { SortedSpill } from '../../util/sorted-spill.js';
import type { ImportJournal, JournalFile } from './journal/journal.js';
import { alreadyApplied } from './journal/settle.js';
import { pad, planSpill } from './plan-files.js';
import { refuse, UNKNOWN_MEMBER_REASON } from './read.js';
import type { RunReport } from '../report.js';

/** `upsert` adds or replaces each member's photo; `register` only adds, `update` only replaces. */
export type PhotoImportMode = 'upsert' | 'register' | 'update';
export type PhotoRoute = 'register' | 'update';

/** A photo named by the source, as the plan keeps it on disk (no bytes, no handle). */
export interface PlacedPhoto {
  /** Where the file is (SourceFile.where). */
  where: string;
  fileName: string;
  /** Its size as the source says. */
  size: number;
  code: string;
  /** Whether the source said the member (else it was taken from the file name). */
  coded: boolean;
  /** Its order in the source. */
  order: number;
}

/** A placed photo with what the listings say of it, as the plan keeps it. */
export interface PhotoRecord extends PlacedPhoto {
  /** Null: refused by the mode unless the journal knows these bytes applied (then skipped). */
  route: PhotoRoute | null;
  /** Why it is refused when its route is null and the journal does not know its bytes. */
  refusal?: string;
  /** `updated_at` of the member's photo before anything is sent; null when it has none. */
  before: string | null;
}

/** `A0001.jpg` → `A0001`, at any folder depth. */
export function codeFromName(name: string): string {
  const base = name.slice(name.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(0, dot) : base;
}

const codeOf = (file: SourceFile): string => file.code ?? codeFromName(file.fileName);

/**
 * Image types the check stage converts to JPEG (photo-check.ts), by their usual extensions: the
 * service refuses them, but a photo from a phone or a scanner is often one of them.
 */
export const CONVERTED_PHOTO_EXTENSIONS = ['heic', 'heif', 'webp', 'tif', 'tiff', 'bmp', 'avif'] as const;

/** Why a photo's name rules it out (service-rules.md: an extension outside the list is invalid), or null. */
export function photoNameProblem(fileName: string): string | null {
  const ext = extensionOf(fileName);
  if (isPhotoExtension(ext) || (CONVERTED_PHOTO_EXTENSIONS as readonly string[]).includes(ext)) return null;
  return `the extension ${ext ? `.${ext}` : '(none)'} is not accepted for photos (accepted: ${PHOTO_EXTENSIONS.join(', ')}; ${CONVERTED_PHOTO_EXTENSIONS.join(', ')} are converted to JPEG)`;
}

/**
 * Before the dedupe stage: a file whose extension is off the list is invalid and not read, so a
 * sidecar (`A0001.xmp`) neither goes as a photo nor counts as a second file for its member. The
 * others, placed with their member.
 */
export function placePhoto(file: SourceFile, order: number, report: RunReport): PlacedPhoto | null {
  const code = codeOf(file);
  const problem = photoNameProblem(file.fileName);
  if (problem) {
    refuse(report, file, code, 'invalid', problem);
    return null;
  }
  return { where: file.where, fileName: file.fileName, size: file.size, code, coded: file.code !== undefined, order };
}

/** The files a duplicate's reason names before it counts the rest. */
const NAMED_DUPLICATES = 5;

/** `updated_at` of every member's photo (of the members `codes` names, when given), keyed as the journal keys targets. */
export async function listPhotos(client: WdsClient, signal?: AbortSignal, codes?: Iterable<string>): Promise<Map<string, string>> {
  // Read entry by entry: the answer's download URLs are not needed here, nor held.
  const only = codes && new Set(codes);
  const photos = new Map<string, string>();
  await client.faceImages.each((p) => {
    if (!only || only.has(p.code)) photos.set(`photo:${p.code}`, p.updated_at);
  }, { signal });
  return photos;
}

/** A member's files the route stage holds at once; a CSV may name one file a million times, and the rest wait on disk. */
const GROUP_HELD = 1024;

/**
 * The route stage: one listing of members and one of photos, each kept sorted by code on disk (a
 * company's members grow as its files do), and each photo sent as its member needs.
 */
export class PhotoRouting {
  private constructor(
    private readonly members: SortedSpill<null>,
    /** `updated_at` of each member's photo before anything is sent. */
    private readonly photos: SortedSpill<string>,
    private readonly mode: PhotoImportMode,
    private readonly journal: ImportJournal | undefined,
  ) {}

  /** `signal` stops both listings (a stopped run does not wait for them, nor for a limit in their way). */
  static async list(client: WdsClient, mode: PhotoImportMode, journal: ImportJournal | undefined, signal?: AbortSignal): Promise<PhotoRouting> {
    const members = new SortedSpill<null>(4096, 16 * 1024);
    const photos = new SortedSpill<string>(4096, 16 * 1024);
    try {
      await Promise.all([
        client.members.each((m) => members.addNow(m.code, null), { signal }),
        client.faceImages.each((p) => photos.addNow(p.code, p.updated_at), { signal }),
      ]);
    } catch (error) {
      members.close();
      photos.close();
      throw error;
    }
    return new PhotoRouting(members, photos, mode, journal);
  }

  /**
   * The dedupe and route stages, the names sorted by code and then source order (`names`) merged
   * with the listings: two files for one code are a conflict the user resolves, and neither is
   * read; unknown members are reported; each other photo goes to register (a member without a
   * photo) or update (a member with one) as the mode allows, handed to `routed` (with the mode's
   * refusal when the journal's bytes may still make it a skip; else it is refused here).
   */
  async route(names: AsyncIterable<[string, PlacedPhoto]>, report: RunReport, routed: (photo: PhotoRecord) => Promise<void>): Promise<void> {
    const members = this.members.sorted()[Symbol.asyncIterator]();
    const photos = this.photos.sorted()[Symbol.asyncIterator]();
    let member = await members.next();
    let photo = await photos.next();
    let held: PlacedPhoto[] = [];
    let more: SortedSpill<PlacedPhoto> | null = null;
    let count = 0;
    const flush = async (): Promise<void> => {
      const first = held[0];
      if (!first) return;
      const { code } = first;
      if (count > 1) {
        // One reason for the member, naming a few of its files.
        const named = held.slice(0, NAMED_DUPLICATES).map((f) => f.where).join(', ');
        const others = count > NAMED_DUPLICATES ? ` and ${(count - NAMED_DUPLICATES).toLocaleString('en-US')} more` : '';
        const reason = `${count.toLocaleString('en-US')} files are for member ${code} (${named}${others}); keep one`;
        for (const file of held) refuse(report, file, code, 'conflict', reason);
        if (more) for await (const [, file] of more.sorted()) refuse(report, file, code, 'conflict', reason);
      } else {
        while (!member.done && member.value[0] < code) member = await members.next();
        while (!photo.done && photo.value[0] < code) photo = await photos.next();
        const before = !photo.done && photo.value[0] === code ? photo.value[1] : null;
        if (member.done || member.value[0] !== code) {
          refuse(report, first, code, 'invalid', `${UNKNOWN_MEMBER_REASON} ${code} (taken from ${first.coded ? 'the source' : 'the file name'})`);
        } else await this.#routeOne(first, before, report, routed);
      }
      more?.close();
      more = null;
      held = [];
      count = 0;
    };
    try {
      for await (const [, file] of names) {
        if (held.length && held[0]!.code !== file.code) await flush();
        count += 1;
        if (held.length < GROUP_HELD) held.push(file);
        else await (more ??= planSpill<PlacedPhoto>()).add(pad(file.order), file);
      }
      await flush();
    } finally {
      (more as SortedSpill<PlacedPhoto> | null)?.close();
      await members.return?.(undefined);
      await photos.return?.(undefined);
      this.close();
    }
  }

  async #routeOne(file: PlacedPhoto, before: string | null, report: RunReport, routed: (photo: PhotoRecord) => Promise<void>): Promise<void> {
    const { code } = file;
    let route: PhotoRoute | null = before === null ? 'register' : 'update';
    let refusal: string | undefined;
    if (before !== null && this.mode === 'register') {
      route = null;
      refusal = `member ${code} already has a photo; register is for members without one (use --mode update or upsert)`;
    } else if (before === null && this.mode === 'update') {
      route = null;
      refusal = `member ${code} has no photo; update replaces an existing one (use --mode register or upsert)`;
    }
    // A refusal by the mode could still turn out a skip only when the journal knows some bytes
    // applied to that member's photo (then the file is read to compare).
    if (!route && this.journal?.applied(`photo:${code}`) === undefined) {
      refuse(report, file, code, 'conflict', refusal!);
      return;
    }
    await routed({
      where: file.where, fileName: file.fileName, size: file.size, code, coded: file.coded, order: file.order, route, ...(refusal === undefined ? {} : { refusal }), before,
    });
  }

  /** After the check: an earlier run applied these very bytes and the service still holds them. */
  appliedBefore(photo: { code: string; before: string | null }, sha256: string): { at: string; held: boolean } | null {
    const listed = { get: (): string | undefined => photo.before ?? undefined };
    return this.journal ? alreadyApplied(this.journal, 'photo', { code: photo.code, sha256 }, listed) : null;
  }

  /** The file as the journal keeps it, with what the listing showed before the send. */
  journalFile(photo: { code: string; before: string | null }, sha256: string): JournalFile {
    return { code: photo.code, sha256, before: photo.before };
  }

  /** Removes the listings' temporary files (safe to call twice). */
  close(): void {
    this.members.close();
    this.photos.close();
  }
}
