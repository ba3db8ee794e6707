/**
 * An export made by wds-files as an import source (DESIGN.md section 4: a folder or a zip with
 * `manifest.jsonl`), the restore half of the round trip. Every manifest line gives one file with
 * what the manifest says of it: the code, the service's original `file_name` (not the safe path),
 * the sheet, the field and the record index. Lines come in the manifest's order (photos by code,
 * attachments by sheet, field, code and record index), which keeps each member's records in the
 * order of the source. A line whose file is missing, a link, or differs in size or sha256 from
 * the manifest is refused with the reason; files the manifest does not name are ignored. An import
 * takes only the lines of its kind (and sheet and field): one export can hold photos and attachments.
 */
import { createHash } from 'node:crypto';
import { lstat, open as fsOpen, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import type { ImportSource, SourceEntry, SourceFile, SourceWant } from './source.js';
import { LinkCheck, MANIFEST_NAME, type ManifestLine } from '../sinks/manifest.js';
import { openManifestInOrder, type OrderedManifest } from '../sinks/manifest-order.js';
import { makeTempDir } from '../util/temp-dir.js';
import { MANIFEST_FILE, errorAbout, tooLargeMessage } from './file-rules.js';
import { LINK_REFUSED, diskFile, openNoFollow } from './folder.js';
import { DEFAULT_MAX_ENTRY_BYTES, bombReason, judgeEntry, openZipReader, zipFile, type ZipSourceOptions } from './zip.js';
import type { ZipReader, ZipEntry } from './zip-reader.js';
import type { Entry } from 'yauzl';
import { EntryTable } from '../sinks/zip-earlier-run.js';

/** The largest manifest of an export zip taken: 1 GB holds some three million lines. */
export const MAX_MANIFEST_BYTES = 1024 * 1024 * 1024;

type Fields = Omit<SourceFile, 'where' | 'size' | 'read' | 'open'>;
type Checked = { file: SourceFile } | { reason: string };

/** What the manifest says of a file, as SourceFile fields. */
function fieldsOf(line: ManifestLine): Fields {
  return {
    relPath: line.path,
    fileName: line.file_name,
    code: line.code,
    ...(line.sheet_id !== null ? { sheetId: line.sheet_id } : {}),
    ...(line.custom_field_id !== null ? { fieldId: line.custom_field_id } : {}),
    ...(line.record_index !== null ? { recordIndex: line.record_index } : {}),
  };
}

/**
 * A manifest line that cannot name a file of the export, or null. Paths that could leave the
 * export never get here: parseManifest refuses them (a problem of its line).
 */
function lineProblem(line: ManifestLine): string | null {
  if (line.kind === 'attachment' && (line.sheet_id === null || line.custom_field_id === null || line.record_index === null)) {
    return 'the manifest line of an attachment lacks sheet_id, custom_field_id or record_index';
  }
  return null;
}

/** Whether an import that wants `want` takes this line. */
function takes(want: SourceWant, line: Pick<ManifestLine, 'kind' | 'sheet_id' | 'custom_field_id'>): boolean {
  if (line.kind !== want.kind) return false;
  if (want.sheetId !== undefined && line.sheet_id !== want.sheetId) return false;
  return want.fieldId === undefined || line.custom_field_id === want.fieldId;
}

const count = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

/** What an import wants, in words: `photos`, `attachments of sheet 2 field 1306`. */
function wantWords(want: SourceWant): string {
  if (want.kind === 'photo') return 'photos';
  const where = [want.sheetId !== undefined ? `sheet ${want.sheetId}` : '', want.fieldId !== undefined ? `field ${want.fieldId}` : ''].filter(Boolean).join(' ');
  return where ? `attachments of ${where}` : 'attachments';
}

/** Files of one kind of an export: its photos, or the attachments of one sheet's field; and how many. */
interface Group {
  kind: ManifestLine['kind'];
  sheet_id: number | null;
  custom_field_id: number | null;
  files: number;
}

/** What groups of manifest lines hold, in words: `26 photos, 500 attachments of sheet 1 field 1204`. */
function groupsWords(groups: Group[]): string {
  return groups.map((g) => (g.kind === 'photo' ? count(g.files, 'photo') : `${count(g.files, 'attachment')} of sheet ${g.sheet_id} field ${g.custom_field_id}`)).join(', ');
}

/** The same words as `wds-files verify`. */
function mismatch(line: ManifestLine, size: number, sha256: string | null): string | null {
  if (size !== line.size) return `size ${size} bytes, the manifest says ${line.size}`;
  if (sha256 !== null && sha256 !== line.sha256) return 'sha256 differs from the manifest';
  return null;
}

async function digest(stream: Readable): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { size, sha256: hash.digest('hex') };
}

/**
 * The manifest's lines in order, read a part at a time each time the files are read (issue 46),
 * and its unreadable lines as refusals. What kinds of files it holds is counted once, as it opens.
 */
abstract class ExportTree implements ImportSource {
  protected constructor(
    readonly label: string,
    private readonly manifest: OrderedManifest,
    private readonly groups: Group[],
  ) {}

  /** The manifest at `file`, opened in order, and its lines counted by kind. */
  protected static async readManifest(file: string): Promise<{ manifest: OrderedManifest; groups: Group[] }> {
    const manifest = await openManifestInOrder(dirname(file), { file });
    try {
      const groups: Group[] = [];
      for await (const { line } of manifest.lines()) {
        const last = groups.at(-1);
        // In manifest order a kind's lines come together: photos, then each sheet's field.
        if (last && last.kind === line.kind && last.sheet_id === line.sheet_id && last.custom_field_id === line.custom_field_id) last.files += 1;
        else groups.push({ kind: line.kind, sheet_id: line.sheet_id, custom_field_id: line.custom_field_id, files: 1 });
      }
      return { manifest, groups };
    } catch (error) {
      await manifest.close();
      throw error;
    }
  }

  protected abstract whereOf(path: string): string;
  /** The file a valid line names, checked against the manifest, or why it is refused. */
  protected abstract check(line: ManifestLine): Promise<Checked>;

  async *entries(want?: SourceWant): AsyncGenerator<SourceEntry> {
    if (want) this.checkWanted(want);
    for (const problem of this.manifest.problems) {
      yield { kind: 'refused', refused: { where: this.whereOf(MANIFEST_NAME), relPath: MANIFEST_NAME, reason: `${MANIFEST_NAME} ${problem}` } };
    }
    for await (const { line } of this.manifest.lines()) {
      if (want && !takes(want, line)) continue;
      const problem = lineProblem(line);
      const checked = problem ? { reason: problem } : await this.check(line);
      if ('reason' in checked) yield { kind: 'refused', refused: { where: this.whereOf(line.path), relPath: line.path, reason: checked.reason, code: line.code } };
      else yield { kind: 'file', file: checked.file };
    }
  }

  /**
   * Whether an import of `want` takes any line. The others are passed over unread, with a note:
   * they are files for another import, not faults (one export folder can hold photos and
   * attachments). An export whose lines are all for another import is an error naming it, as
   * nothing would be done.
   */
  private checkWanted(want: SourceWant): void {
    const passed = this.groups.filter((g) => !takes(want, g));
    if (!passed.length) return;
    if (passed.length === this.groups.length) throw errorAbout(this.label, `the export holds no ${wantWords(want)} (its ${MANIFEST_NAME} lists ${groupsWords(passed)})`);
    want.note?.(`${this.label}: passed over ${groupsWords(passed)} of the export; this import takes its ${wantWords(want)}`);
  }

  async close(): Promise<void> {
    await this.manifest.close();
  }
}

/** An export folder. */
export class ExportFolderSource extends ExportTree {
  private readonly links = new LinkCheck(this.label);

  static async open(dir: string): Promise<ExportFolderSource> {
    let read: Awaited<ReturnType<typeof ExportTree.readManifest>>;
    try {
      read = await ExportTree.readManifest(join(dir, MANIFEST_NAME));
    } catch (error) {
      throw errorAbout(dir, `no readable ${MANIFEST_NAME}; it is not an export folder (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    }
    return new ExportFolderSource(dir, read.manifest, read.groups);
  }

  protected whereOf(path: string): string {
    return join(this.label, path);
  }

  protected async check(line: ManifestLine): Promise<Checked> {
    const path = this.whereOf(line.path);
    const link = await this.links.linkIn(line.path);
    if (link) return { reason: link === line.path ? LINK_REFUSED : LinkCheck.reason(link) };
    let info;
    try {
      info = await lstat(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      return { reason: code === 'ENOENT' || code === 'ENOTDIR' ? 'missing from the export (the manifest lists it)' : `cannot be read (${code ?? String(error)})` };
    }
    if (info.isSymbolicLink()) return { reason: LINK_REFUSED };
    if (!info.isFile()) return { reason: 'is not a regular file' };
    const bySize = mismatch(line, info.size, null);
    if (bySize) return { reason: bySize };
    try {
      const { size, sha256 } = await digest(await openNoFollow(path, path, info.size));
      const problem = mismatch(line, size, sha256);
      if (problem) return { reason: problem };
    } catch (error) {
      return { reason: `cannot be read (${(error as Error).message})` };
    }
    return { file: diskFile(path, { ...fieldsOf(line), size: line.size }) };
  }
}

/** An export zip: the central directory is read once, then each manifest line is looked up in it. */
export class ExportZipSource extends ExportTree {
  private constructor(
    label: string,
    read: Awaited<ReturnType<typeof ExportTree.readManifest>>,
    private readonly reader: ZipReader,
    /** The entries to read, by path, in typed arrays (about 40 bytes an entry, where ZipEntry objects took 1 KB). */
    private readonly table: EntryTable,
    /** Why an entry is refused, by path: the few a zip may hold. */
    private readonly refused: Map<string, string>,
    /** The temporary folder the manifest entry was copied to, read from there. */
    private readonly temp: string,
  ) {
    super(label, read.manifest, read.groups);
  }

  /**
   * Opens a zip as an export, or resolves null (the zip closed again) when it holds no
   * `manifest.jsonl` at its root. A zip that cannot be read is a fatal error naming it.
   */
  static async tryOpen(path: string, options: ZipSourceOptions = {}): Promise<ExportZipSource | null> {
    const reader = await openZipReader(path);
    try {
      const maxEntryBytes = options.maxEntryBytes ?? DEFAULT_MAX_ENTRY_BYTES;
      const table = new EntryTable();
      const refused = new Map<string, string>();
      let manifest: ZipEntry | null = null;
      for await (const entry of reader.entries()) {
        // Judged with the larger cap first, so that the manifest is found; files get their own cap below.
        const verdict = judgeEntry(entry, { maxEntryBytes: Math.max(maxEntryBytes, MAX_MANIFEST_BYTES), skipJunk: false });
        if (verdict.kind === 'skip') continue;
        if (verdict.relPath === MANIFEST_FILE) {
          if (verdict.kind === 'refuse') throw new Error(`${path}: its ${MANIFEST_NAME} cannot be read: ${verdict.reason}`);
          manifest = entry;
          continue;
        }
        // A zip may hold one name twice; the first is the one the export wrote.
        if (table.sizeOf(verdict.relPath) >= 0 || refused.has(verdict.relPath)) continue;
        const refusal = verdict.kind === 'refuse' ? verdict.reason : bombReason(entry, maxEntryBytes);
        if (refusal) refused.set(verdict.relPath, refusal);
        else table.put(entry.entry, verdict.relPath);
      }
      if (!manifest) {
        reader.close();
        return null;
      }
      const where = `${path}:${MANIFEST_NAME}`;
      // Copied to a temporary file, to be read a part at a time from there.
      const temp = await makeTempDir('export-manifest');
      try {
        const file = join(temp, MANIFEST_NAME);
        await copyLimited(where, manifest.size, MAX_MANIFEST_BYTES, () => reader.openStream(manifest), file);
        return new ExportZipSource(path, await ExportTree.readManifest(file), reader, table, refused, temp);
      } catch (error) {
        await rm(temp, { recursive: true, force: true });
        throw error;
      }
    } catch (error) {
      reader.close();
      throw errorAbout(path, error);
    }
  }

  protected whereOf(path: string): string {
    return `${this.label}:${path}`;
  }

  protected async check(line: ManifestLine): Promise<Checked> {
    const refusal = this.refused.get(line.path);
    if (refusal) return { reason: refusal };
    const kept = this.table.entry(line.path);
    if (!kept) return { reason: 'missing from the export (the manifest lists it)' };
    const entry = asZipEntry(line.path, kept);
    const bySize = mismatch(line, entry.size, null);
    if (bySize) return { reason: bySize };
    try {
      const { size, sha256 } = await digest(await this.reader.openStream(entry));
      const problem = mismatch(line, size, sha256);
      if (problem) return { reason: problem };
    } catch (error) {
      return { reason: `cannot be read (${(error as Error).message})` };
    }
    return { file: zipFile(this.reader, entry, this.whereOf(line.path), fieldsOf(line)) };
  }

  override async close(): Promise<void> {
    this.reader.close();
    await super.close();
    await rm(this.temp, { recursive: true, force: true });
  }
}

/** The stream `open` gives written to `file`, refused past `maxBytes` as readLimited refuses it. */
async function copyLimited(where: string, size: number, maxBytes: number, open: () => Promise<Readable>, file: string): Promise<void> {
  if (size > maxBytes) throw new Error(tooLargeMessage(where, size, maxBytes));
  const stream = await open();
  const handle = await fsOpen(file, 'w', 0o600);
  let total = 0;
  try {
    for await (const chunk of stream) {
      const data = chunk as Buffer;
      total += data.length;
      if (total > maxBytes) throw new Error(tooLargeMessage(where, `more than ${maxBytes}`, maxBytes));
      await handle.write(data);
    }
  } catch (error) {
    stream.destroy();
    throw errorAbout(where, error);
  } finally {
    await handle.close();
  }
}

/** A ZipEntry made again from what the table kept: what reading it needs (a taken entry is a file, not encrypted). */
function asZipEntry(name: string, entry: Entry): ZipEntry {
  return {
    name, rawName: Buffer.from(name), size: entry.uncompressedSize, compressedSize: entry.compressedSize, isDirectory: false, utf8: true,
    mode: 0, compressionMethod: entry.compressionMethod, encrypted: false, extraFields: [], crc32: entry.crc32, entry,
  };
}
