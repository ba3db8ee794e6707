/**
 * The export manifest (DESIGN.md section 4): `manifest.jsonl`, one line per file, with the
 * service's own name and where the file is in the export. A manifest may come from anywhere, so
 * its paths are untrusted (DESIGN.md section 8): a line whose path could leave the export is
 * refused here, once, for `verify`, the export's rerun and the import alike; links on the way are
 * found where the disk is read (`LinkCheck`).
 */
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { readSource, sourceLineText, type ExportSource } from './source.js';

export const MANIFEST_NAME = 'manifest.jsonl';

export const manifestLineSchema = z.looseObject({
  kind: z.enum(['photo', 'attachment']),
  code: z.string(),
  sheet_id: z.number().int().nullable(),
  custom_field_id: z.number().int().nullable(),
  record_index: z.number().int().nullable(),
  file_name: z.string(),
  path: z.string(),
  size: z.number().int().min(0),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  updated_at: z.string(),
});
export type ManifestLine = z.infer<typeof manifestLineSchema>;

const SHA256 = /^[0-9a-f]{64}$/;
const intOrNull = (value: unknown): boolean => value === null || Number.isSafeInteger(value);

/**
 * What manifestLineSchema accepts, checked by hand: a line this passes, the schema passes too, and
 * one it does not is given to the schema for its message. An archive run reads the earlier
 * snapshot's every line at its start, where the schema alone was slow (bench/notes.md, "Manifests").
 */
function plainManifestLine(value: unknown): value is ManifestLine {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (v.kind === 'photo' || v.kind === 'attachment') && typeof v.code === 'string' && intOrNull(v.sheet_id) && intOrNull(v.custom_field_id)
    && intOrNull(v.record_index) && typeof v.file_name === 'string' && typeof v.path === 'string' && Number.isSafeInteger(v.size) && (v.size as number) >= 0
    && typeof v.sha256 === 'string' && SHA256.test(v.sha256) && typeof v.updated_at === 'string';
}

export function manifestKey(line: Pick<ManifestLine, 'kind' | 'code' | 'sheet_id' | 'custom_field_id' | 'record_index' | 'file_name'>): string {
  return line.kind === 'photo'
    ? `photo:${line.code}`
    : `attachment:${line.sheet_id}:${line.custom_field_id}:${line.code}:${line.record_index}:${line.file_name}`;
}

export function formatLine(line: ManifestLine): string {
  const { kind, code, sheet_id, custom_field_id, record_index, file_name, path, size, sha256, updated_at } = line;
  return `${JSON.stringify({ kind, code, sheet_id, custom_field_id, record_index, file_name, path, size, sha256, updated_at })}\n`;
}

/**
 * The text of `lines`, 256 lines at a time, so that the whole text and the strings it is joined
 * from are never in memory at once (bench/notes.md, "Manifests"). The source, when given, is the
 * first line.
 */
export function* manifestChunks(lines: ManifestLine[], source?: ExportSource): Generator<Buffer> {
  if (source) yield Buffer.from(sourceLineText(source));
  for (let i = 0; i < lines.length; i += 256) yield Buffer.from(lines.slice(i, i + 256).map(formatLine).join(''));
}

/** A manifest's good lines by key, and what was wrong with the others. */
export interface ManifestLines {
  lines: Map<string, ManifestLine>;
  /** Lines that could not be read, or whose path is refused, with their numbers. */
  problems: string[];
  /**
   * Where the files came from: the manifest's `{"kind":"source",...}` line. Manifests written
   * before sources were recorded have none.
   */
  source?: ExportSource;
}

export interface ParsedManifest extends ManifestLines {
  /** Where each of `lines` stands in the text (from 1), for messages about it. */
  lineNumbers: Map<string, number>;
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
// eslint-disable-next-line no-control-regex
const MAYBE_UNSAFE_PATH = /^$|^\/|^[A-Za-z]:|\\|\/\/|\/$|(^|\/)\.\.?(\/|$)|[\u0000-\u001f\u007f]/;

/**
 * Why a manifest path cannot name a file inside the export, or null: it must be relative,
 * `/`-separated, and go down only (the paths wds-files writes always are).
 */
export function manifestPathProblem(path: string): string | null {
  // Every path the checks below refuse matches this; most paths do not, and need no more work.
  if (!MAYBE_UNSAFE_PATH.test(path)) return null;
  const shown = (): string => JSON.stringify(path);
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) return `the path ${shown()} is absolute; paths in the manifest must stay inside the export`;
  if (path.includes('\\')) return `the path ${shown()} holds a backslash; paths in the manifest are /-separated and stay inside the export`;
  const segments = path.split('/');
  if (segments.includes('..')) return `the path ${shown()} goes up with ..; paths in the manifest must stay inside the export`;
  if (segments.some((s) => s === '' || s === '.')) return `the path ${shown()} has an empty or . segment; it is not a plain path inside the export`;
  if (CONTROL.test(path)) return `the path ${shown()} holds control characters`;
  return null;
}

/** Whether a parsed line is the manifest's source line rather than a file's. */
export const isSourceLine = (value: unknown): boolean => typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'source';

/** Reads one line of manifest text (number from 1) into `into`; answers the line if it is good. */
function readManifestLine(raw: string, number: number, into: ManifestLines & { lineNumbers?: Map<string, number> }): ManifestLine | undefined {
  const line = checkManifestLine(raw, number, into);
  if (!line) return undefined;
  const key = manifestKey(line);
  into.lines.set(key, line);
  into.lineNumbers?.set(key, number);
  return line;
}

/**
 * One line of manifest text (number from 1), if it is a good file's line; its problem goes to
 * `into.problems`, and a source line to `into.source`.
 */
export function checkManifestLine(raw: string, number: number, into: Pick<ManifestLines, 'problems' | 'source'>): ManifestLine | undefined {
  if (!raw.trim()) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    into.problems.push(`line ${number}: not JSON`);
    return undefined;
  }
  let line: ManifestLine;
  if (plainManifestLine(value)) line = value;
  else if (isSourceLine(value)) {
    const source = readSource(value);
    if (!source) into.problems.push(`line ${number}: a source line needs base_url and company`);
    // The first source line counts; a manifest has one.
    else into.source ??= source;
    return undefined;
  } else {
    const parsed = manifestLineSchema.safeParse(value);
    if (!parsed.success) {
      into.problems.push(`line ${number}: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`);
      return undefined;
    }
    line = parsed.data;
  }
  const unsafe = manifestPathProblem(line.path);
  if (unsafe) {
    into.problems.push(`line ${number}: ${unsafe}`);
    return undefined;
  }
  return line;
}

/** Reads manifest text; a later line for the same file wins (the folder sink appends). */
export function parseManifest(text: string): ParsedManifest {
  const parsed: ParsedManifest = { lines: new Map(), lineNumbers: new Map(), problems: [] };
  text.split('\n').forEach((raw, i) => {
    readManifestLine(raw, i + 1, parsed);
  });
  return parsed;
}

/** Strings by their UTF-16 code units: the same order on every machine, whatever its locale. */
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Manifest lines in a stable order: photos by code, then attachments by sheet, field, code, record.
 * Codes and names compare by code unit, not by locale: a manifest reads the same wherever it was
 * written, and `localeCompare` is slow on a fresh process's first calls (bench/notes.md, "Manifests").
 */
export function sortLines(lines: Iterable<ManifestLine>): ManifestLine[] {
  return [...lines].sort((a, b) =>
    a.kind !== b.kind ? (a.kind === 'photo' ? -1 : 1)
      : (a.sheet_id ?? 0) - (b.sheet_id ?? 0) || (a.custom_field_id ?? 0) - (b.custom_field_id ?? 0)
        || byCodeUnits(a.code, b.code) || (a.record_index ?? 0) - (b.record_index ?? 0) || byCodeUnits(a.file_name, b.file_name));
}

/**
 * The order of a final manifest (sortLines', a photo by its code alone, as its key is): 0 for
 * two lines of one file.
 */
export const compareLines = (a: ManifestLine, b: ManifestLine): number =>
  a.kind !== b.kind ? (a.kind === 'photo' ? -1 : 1)
    : (a.sheet_id ?? 0) - (b.sheet_id ?? 0) || (a.custom_field_id ?? 0) - (b.custom_field_id ?? 0)
      || byCodeUnits(a.code, b.code) || (a.kind === 'photo' ? 0 : (a.record_index ?? 0) - (b.record_index ?? 0) || byCodeUnits(a.file_name, b.file_name));

/** Where a file goes in the export tree, before de-duplication (DESIGN.md section 4). */
export function exportDir(line: Pick<ManifestLine, 'kind' | 'code' | 'sheet_id' | 'custom_field_id'>, safe: (s: string) => string): string {
  return line.kind === 'photo' ? 'photos' : `attachments/${line.sheet_id}/${line.custom_field_id}/${safe(line.code)}`;
}

/** Folders a LinkCheck remembers before it forgets them. */
const RECENT_FOLDERS = 4096;

/**
 * Finds links on the way to a manifest path inside an export folder: a path that leads through a
 * link may end outside the folder, so it is neither read nor written. Folders seen lately are
 * remembered, so a manifest of 20,000 photos costs one lstat of `photos/` and one per file; past
 * RECENT_FOLDERS (an attachment export has a folder a member) they are forgotten and looked at again.
 */
export class LinkCheck {
  private readonly folders = new Map<string, Promise<string | null>>();

  constructor(private readonly root: string) {}

  /** The first part of `path` (a checked manifest path) that is a link, or null; a missing part is not a link. */
  async linkIn(path: string): Promise<string | null> {
    return (await this.folderLinkIn(path)) ?? ((await this.isLink(path)) ? path : null);
  }

  /** The first folder on the way to `path` that is a link, or null: `linkIn` but for the file itself, which the caller lstats. */
  async folderLinkIn(path: string): Promise<string | null> {
    const segments = path.split('/');
    for (let n = 1; n < segments.length; n += 1) {
      const found = await this.folder(segments.slice(0, n).join('/'));
      if (found) return found;
    }
    return null;
  }

  /** The reason a line is refused when `linkIn` finds a link. */
  static reason(link: string): string {
    return `leads through a link (${link}); links are not followed`;
  }

  private folder(part: string): Promise<string | null> {
    let known = this.folders.get(part);
    if (!known) {
      known = this.isLink(part).then((link) => (link ? part : null));
      if (this.folders.size >= RECENT_FOLDERS) this.folders.clear();
      this.folders.set(part, known);
    }
    return known;
  }

  private async isLink(part: string): Promise<boolean> {
    try {
      return (await lstat(join(this.root, part))).isSymbolicLink();
    } catch {
      return false;
    }
  }
}
