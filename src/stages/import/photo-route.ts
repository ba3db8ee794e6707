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
import type { ImportJournal, JournalFile } from './journal/journal.js';
import { alreadyApplied } from './journal/settle.js';
import { refuse, UNKNOWN_MEMBER_REASON } from './read.js';
import type { RunReport } from '../report.js';

/** `upsert` adds or replaces each member's photo; `register` only adds, `update` only replaces. */
export type PhotoImportMode = 'upsert' | 'register' | 'update';
export type PhotoRoute = 'register' | 'update';

/** A photo on its way: its file and member, and the request kind it goes in. */
export interface RoutedPhoto {
  file: SourceFile;
  code: string;
  /** Null: refused by the mode unless the journal knows these bytes applied (then skipped). */
  route: PhotoRoute | null;
  /** Why it is refused when its route is null and the journal does not know its bytes. */
  refusal?: string;
  /** Its order in the source. */
  order: number;
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
 * sidecar (`A0001.xmp`) neither goes as a photo nor counts as a second file for its member.
 */
export function photoNamesAccepted(files: SourceFile[], report: RunReport): SourceFile[] {
  return files.filter((file) => {
    const problem = photoNameProblem(file.fileName);
    if (problem) refuse(report, file, codeOf(file), 'invalid', problem);
    return !problem;
  });
}

/** The dedupe stage: one file per member; two files for one code are a conflict the user resolves, and neither is read. */
export function dedupePhotos(files: SourceFile[], report: RunReport): SourceFile[] {
  const byCode = new Map<string, SourceFile[]>();
  for (const file of files) {
    const code = codeOf(file);
    const same = byCode.get(code);
    if (same) same.push(file);
    else byCode.set(code, [file]);
  }
  // One reason per member, naming a few of its files: a CSV may name one file a million times.
  const reasons = new Map<string, string>();
  const reasonFor = (code: string, same: SourceFile[]): string => {
    let reason = reasons.get(code);
    if (reason === undefined) {
      const named = same.slice(0, NAMED_DUPLICATES).map((f) => f.where).join(', ');
      const more = same.length > NAMED_DUPLICATES ? ` and ${(same.length - NAMED_DUPLICATES).toLocaleString('en-US')} more` : '';
      reason = `${same.length.toLocaleString('en-US')} files are for member ${code} (${named}${more}); keep one`;
      reasons.set(code, reason);
    }
    return reason;
  };
  return files.filter((file) => {
    const code = codeOf(file);
    const same = byCode.get(code)!;
    if (same.length === 1) return true;
    refuse(report, file, code, 'conflict', reasonFor(code, same));
    return false;
  });
}

/** The files a duplicate's reason names before it counts the rest. */
const NAMED_DUPLICATES = 5;

/** `updated_at` of every member's photo, keyed as the journal keys targets. */
export async function listPhotos(client: WdsClient, signal?: AbortSignal): Promise<Map<string, string>> {
  // Read entry by entry: the answer's download URLs are not needed here, nor held.
  const photos = new Map<string, string>();
  await client.faceImages.each((p) => photos.set(`photo:${p.code}`, p.updated_at), { signal });
  return photos;
}

/** The route stage: one listing of members and one of photos, each file sent as its member needs. */
export class PhotoRouting {
  private constructor(
    private readonly members: Set<string>,
    /** `updated_at` of each member's photo before anything is sent. */
    readonly photos: Map<string, string>,
    private readonly mode: PhotoImportMode,
    private readonly journal: ImportJournal | undefined,
  ) {}

  /** `signal` stops both listings (a stopped run does not wait for them, nor for a limit in their way). */
  static async list(client: WdsClient, mode: PhotoImportMode, journal: ImportJournal | undefined, signal?: AbortSignal): Promise<PhotoRouting> {
    const members = new Set<string>();
    const [, photos] = await Promise.all([client.members.each((m) => members.add(m.code), { signal }), listPhotos(client, signal)]);
    return new PhotoRouting(members, photos, mode, journal);
  }

  /**
   * Photos for members without one first, then those replacing one, each in source order (the
   * fewest requests per route); unknown members are reported and left out.
   */
  route(files: SourceFile[], report: RunReport): RoutedPhoto[] {
    const routed: RoutedPhoto[] = [];
    files.forEach((file, order) => {
      const code = codeOf(file);
      if (!this.members.has(code)) {
        refuse(report, file, code, 'invalid', `${UNKNOWN_MEMBER_REASON} ${code} (taken from ${file.code ? 'the source' : 'the file name'})`);
        return;
      }
      const has = this.photos.has(`photo:${code}`);
      if (has && this.mode === 'register') {
        routed.push({ file, code, order, route: null, refusal: `member ${code} already has a photo; register is for members without one (use --mode update or upsert)` });
      } else if (!has && this.mode === 'update') {
        routed.push({ file, code, order, route: null, refusal: `member ${code} has no photo; update replaces an existing one (use --mode register or upsert)` });
      } else routed.push({ file, code, order, route: has ? 'update' : 'register' });
    });
    const rank = (p: RoutedPhoto): number => (p.route === 'register' ? 0 : p.route === 'update' ? 1 : 2);
    return routed.sort((a, b) => rank(a) - rank(b) || a.order - b.order);
  }

  /**
   * Whether a refusal by the mode could still turn out a skip: only when the journal knows some
   * bytes applied to that member's photo (then the file is read to compare).
   */
  worthChecking(photo: RoutedPhoto): boolean {
    return photo.route !== null || (this.journal?.applied(`photo:${photo.code}`) !== undefined);
  }

  /** After the check: an earlier run applied these very bytes and the service still holds them. */
  appliedBefore(code: string, sha256: string): { at: string; held: boolean } | null {
    return this.journal ? alreadyApplied(this.journal, 'photo', { code, sha256 }, this.photos) : null;
  }

  /** The file as the journal keeps it, with what the listing showed before the send. */
  journalFile(code: string, sha256: string): JournalFile {
    return { code, sha256, before: this.photos.get(`photo:${code}`) ?? null };
  }
}
