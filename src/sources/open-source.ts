/**
 * Picks the import source for what the user named (DESIGN.md sections 4 and 5): a folder (an
 * export folder when it holds `manifest.jsonl`), a `.zip` (an export zip when `manifest.jsonl` is
 * at its root), a `.csv` manifest, or an export's `manifest.jsonl` itself.
 */
import { stat } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import type { ImportSource } from './source.js';
import { FolderSource } from './folder.js';
import { ZipSource } from './zip.js';
import { CsvSource } from './csv.js';
import { ExportFolderSource, ExportZipSource } from './export-tree.js';
import { MANIFEST_FILE } from './file-rules.js';

/** Options of {@link openSource}. Its own type, so that the package's public types need no zip reader's. */
export interface OpenSourceOptions {
  /** Zip entries declaring more uncompressed bytes are refused without being inflated. Default 64 MB. */
  maxEntryBytes?: number;
}

async function isFile(path: string): Promise<boolean> {
  return stat(path).then((s) => s.isFile(), () => false);
}

/**
 * Opens what a user names for an import: a folder (an export folder when it holds
 * `manifest.jsonl`), a `.zip` (an export zip when `manifest.jsonl` is at its root), a `.csv`
 * manifest (`code,path[,file_name]`), or an export's `manifest.jsonl`. Close it when done.
 */
export async function openSource(pathOrFile: string, options: OpenSourceOptions = {}): Promise<ImportSource> {
  let info;
  try {
    info = await stat(pathOrFile);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(`${pathOrFile}: ${code === 'ENOENT' ? 'no such file or folder' : `cannot be read (${code ?? String(error)})`}`);
  }
  if (info.isDirectory()) {
    return (await isFile(join(pathOrFile, MANIFEST_FILE))) ? ExportFolderSource.open(pathOrFile) : new FolderSource(pathOrFile);
  }
  const ext = extname(pathOrFile).toLowerCase();
  if (ext === '.zip') return (await ExportZipSource.tryOpen(pathOrFile, options)) ?? ZipSource.open(pathOrFile, options);
  if (ext === '.csv') return CsvSource.open(pathOrFile);
  if (basename(pathOrFile) === MANIFEST_FILE) return ExportFolderSource.open(dirname(pathOrFile));
  throw new Error(`${pathOrFile}: cannot import from this file; give a folder, a .zip, a .csv manifest (code,path[,file_name]) or an export's ${MANIFEST_FILE}`);
}
