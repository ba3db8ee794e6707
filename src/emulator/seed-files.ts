/**
 * The files of a seed folder: face photos in `photos/<code>.jpg` and the attachments that sheet
 * records name by relative path. They are checked when the seed loads (inside the folder, a
 * regular file, within the service's 5 MB, an accepted type) and read only when downloaded.
 */
import { open, readdir, stat } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { MAX_FILE_BYTES } from '../spec/limits.js';
import { extensionOf, isAttachmentExtension, sniffPhotoType } from '../spec/extensions.js';

export interface SeedFile {
  path: string;
  size: number;
}

export type Checked = { ok: true; file: SeedFile } | { ok: false; problem: string };

/** A relative path with `/` separators that stays inside the folder. */
function pathProblem(relative: string): string | undefined {
  if (isAbsolute(relative) || relative.includes('\\')) return 'must be a relative path with / separators';
  if (relative.split('/').some((part) => part === '' || part === '.' || part === '..')) return 'must stay inside the seed folder (no empty, . or .. parts)';
  return undefined;
}

async function regularFile(root: string, relative: string): Promise<Checked> {
  const path = join(root, relative);
  let size: number;
  try {
    const info = await stat(path);
    if (!info.isFile()) return { ok: false, problem: `${relative} is not a regular file` };
    size = info.size;
  } catch {
    return { ok: false, problem: `${relative} does not exist` };
  }
  // The service holds no empty file and none over 5 MB (api-v2.md 4.4 Members 7, Sheets 9).
  if (size === 0) return { ok: false, problem: `${relative} is empty` };
  if (size > MAX_FILE_BYTES) return { ok: false, problem: `${relative} is ${size} bytes, over the service's limit of ${MAX_FILE_BYTES} bytes (5 MB)` };
  return { ok: true, file: { path, size } };
}

/** An attachment named by a record, shown as `fileName` (api-v2.md 4.4 Sheets 9: accepted types). */
export async function checkAttachment(root: string, relative: string, fileName: string): Promise<Checked> {
  const problem = pathProblem(relative);
  if (problem) return { ok: false, problem: `file "${relative}" ${problem}` };
  if (/[\\/]/.test(fileName)) return { ok: false, problem: `file_name "${fileName}" must not contain / or \\` };
  const ext = extensionOf(fileName);
  if (!isAttachmentExtension(ext)) {
    return { ok: false, problem: `file_name "${fileName}": the extension ${ext ? `.${ext}` : '(none)'} is not accepted for attachments` };
  }
  return regularFile(root, relative);
}

/** The JPEG photos of `photos/`, by member code; problems for anything else in that folder. */
export async function readPhotos(root: string, problems: string[]): Promise<Map<string, SeedFile>> {
  const photos = new Map<string, SeedFile>();
  let names: string[];
  try {
    names = (await readdir(join(root, 'photos'))).sort();
  } catch {
    return photos;
  }
  for (const name of names) {
    const relative = `photos/${name}`;
    // Face images are listed as jpg/jpeg (api-v2.md 4.4 Members 6), so a seed holds only JPEGs.
    const match = /^(.+)\.jpe?g$/i.exec(name);
    if (!match) {
      problems.push(`${relative}: photos are named <code>.jpg (or .jpeg)`);
      continue;
    }
    const code = match[1]!;
    if (photos.has(code)) {
      problems.push(`${relative}: member ${code} has more than one photo`);
      continue;
    }
    const checked = await regularFile(root, relative);
    if (!checked.ok) {
      problems.push(`${relative}: ${checked.problem}`);
      continue;
    }
    if ((await leadingBytes(checked.file.path, 3)) !== 'jpeg') {
      problems.push(`${relative}: is not a JPEG image (checked by its bytes)`);
      continue;
    }
    photos.set(code, checked.file);
  }
  return photos;
}

async function leadingBytes(path: string, count: number): Promise<ReturnType<typeof sniffPhotoType>> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(count);
    await handle.read(buffer, 0, count, 0);
    return sniffPhotoType(buffer);
  } finally {
    await handle.close();
  }
}
