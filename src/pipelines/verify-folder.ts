/**
 * `wds-files verify`: every file of an export folder or zip checked against its manifest: present,
 * the size and the sha256 of the manifest. Names each mismatch or missing file.
 */
import { createHash } from 'node:crypto';
import { lstat, readFile, readdir, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { LinkCheck, MANIFEST_NAME, parseManifest, type ManifestLine } from '../sinks/manifest.js';
import { hashFile } from '../util/hash-file.js';
import { ZipReader } from '../sources/zip-reader.js';
import { isZipTarget } from './export-defaults.js';
import { isLockFileName } from '../util/target-lock.js';
import { SNAPSHOT_FILE } from '../archive/store.js';

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
  /** With `{ items: true }`: every manifest line and every other file, in the order checked, and how each came out. */
  items?: VerifyItem[];
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

function check(line: ManifestLine, size: number, sha256: string): string | null {
  if (size !== line.size) return `size ${size} bytes, the manifest says ${line.size}`;
  if (sha256 !== line.sha256) return 'sha256 differs from the manifest';
  return null;
}

/** Checks every file of an export folder or zip against its manifest: present, with its size and sha256. */
export async function verifyExport(target: string, options: { items?: boolean } = {}): Promise<VerifyResult> {
  const result: VerifyResult = { target, files: 0, bytes: 0, ok: 0, problems: [], ...(options.items ? { items: [] } : {}) };
  const fail = (path: string, problem: string): void => {
    result.problems.push({ path, problem });
    result.items?.push({ path, outcome: 'problem', problem });
  };
  const pass = (path: string, size: number): void => {
    result.ok += 1;
    result.bytes += size;
    result.items?.push({ path, outcome: 'ok', size });
  };
  // A stopped zip export's `.partial` is a complete zip with its manifest (README): checked as one.
  if (isZipTarget(target) || /\.zip\.partial$/i.test(target)) {
    const zip = await ZipReader.open(target);
    try {
      // The manifest is the last entry: hash every entry on the way, then compare.
      const seen = new Map<string, { size: number; sha256: string } | { unreadable: string }>();
      let manifestText: string | null = null;
      for await (const entry of zip.entries()) {
        if (entry.isDirectory) continue;
        if (entry.name === MANIFEST_NAME) {
          const chunks: Buffer[] = [];
          try {
            for await (const c of await zip.openStream(entry)) chunks.push(c as Buffer);
          } catch (error) {
            throw new Error(`${target}: its ${MANIFEST_NAME} cannot be read: ${(error as Error).message}`);
          }
          manifestText = Buffer.concat(chunks).toString('utf8');
          continue;
        }
        // An entry whose bytes differ from its CRC-32 or declared size is a problem of that entry.
        try {
          const hash = createHash('sha256');
          let size = 0;
          for await (const c of await zip.openStream(entry)) {
            hash.update(c as Buffer);
            size += (c as Buffer).length;
          }
          seen.set(entry.name, { size, sha256: hash.digest('hex') });
        } catch (error) {
          seen.set(entry.name, { unreadable: (error as Error).message });
        }
      }
      if (manifestText === null) throw new Error(`${target}: no ${MANIFEST_NAME} in the zip; it is not a complete export`);
      const manifest = parseManifest(manifestText);
      for (const p of manifest.problems) fail(MANIFEST_NAME, p);
      for (const line of manifest.lines.values()) {
        result.files += 1;
        const got = seen.get(line.path);
        seen.delete(line.path);
        if (!got) {
          fail(line.path, 'missing');
          continue;
        }
        if ('unreadable' in got) {
          fail(line.path, got.unreadable);
          continue;
        }
        const problem = check(line, got.size, got.sha256);
        if (problem) fail(line.path, problem);
        else pass(line.path, got.size);
      }
      for (const extra of seen.keys()) fail(extra, 'not in the manifest');
    } finally {
      zip.close();
    }
    return result;
  }
  let text: string;
  try {
    text = await readFile(join(target, MANIFEST_NAME), 'utf8');
  } catch (error) {
    // Which of the target and its manifest is missing, or unreadable, says what to mend.
    const code = (error as NodeJS.ErrnoException).code;
    const info = await stat(target).catch(() => null);
    if (!info) throw new Error(`${target}: no such folder or zip`);
    if (!info.isDirectory()) throw new Error(`${target}: neither a folder nor a .zip file; verify checks an export folder, a snapshot or an export zip`);
    if (code === 'ENOENT') throw new Error(`${target}: no ${MANIFEST_NAME}; it is not an export folder`);
    throw new Error(`${join(target, MANIFEST_NAME)} cannot be read (${code ?? (error as Error).message})`);
  }
  const manifest = parseManifest(text);
  for (const p of manifest.problems) fail(MANIFEST_NAME, p);
  const links = new LinkCheck(target);
  for (const [key, line] of manifest.lines) {
    result.files += 1;
    const path = join(target, line.path);
    // A path through a link may end outside the export: it is reported, and not read.
    const link = await links.linkIn(line.path);
    if (link) {
      fail(line.path, `${MANIFEST_NAME} line ${manifest.lineNumbers.get(key)}: ${LinkCheck.reason(link)}`);
      continue;
    }
    let size: number;
    try {
      const info = await lstat(path);
      if (!info.isFile()) {
        fail(line.path, info.isSymbolicLink() ? 'is a link, not the file the manifest lists' : 'is not a regular file (a folder?), the manifest lists a file');
        continue;
      }
      size = info.size;
    } catch {
      fail(line.path, 'missing');
      continue;
    }
    const problem = check(line, size, size === line.size ? (await hashFile(path)).sha256 : '');
    if (problem) fail(line.path, problem);
    else pass(line.path, size);
  }
  // As in a zip, a file the manifest does not name is reported (a leftover, or something added).
  const named = new Set([...manifest.lines.values()].map((line) => line.path));
  for (const path of await filesUnder(target)) {
    // The lock of a run writing the folder (or one a killed run left) is not an export file, nor
    // is an archive snapshot's own description.
    if (path !== MANIFEST_NAME && path !== SNAPSHOT_FILE && !isLockFileName(path) && !named.has(path)) fail(path, 'not in the manifest');
  }
  return result;
}

/** Every file under `dir`, as a path inside the export (`/` separated). */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join('/')).sort();
}
