/**
 * A thread of the Linker (linker.ts): places the files it is sent, in batches, into the snapshot
 * being built, with synchronous calls (this thread does nothing else), and answers each batch with
 * what it placed. Started by the Linker with its `LinkerData`; see there for the checks it makes.
 */
import fs from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { changedOutside, type WriteWindows } from './writes.js';
import { PathHashes } from '../util/safe-name.js';

/** What the Linker starts a thread with. */
export interface LinkerData {
  /** The new snapshot's folder. */
  target: string;
  /** Errors of `link` that mean the file system has no hard links: the file is copied instead. */
  noHardLinks: string[];
  /** When the archive's commands wrote in it: a file changed outside those times is not taken over. */
  writes: WriteWindows;
  /** Folders made (or checked) before, by the thread that made them ahead of the run (placing files ahead). */
  made: string[];
}

/**
 * A part to place: `roots` once, then for each file its root's index, its path in the earlier
 * snapshot (empty when it is its path in the new one), its path in the new one and its size. Parts
 * placed ahead of the listing are marked `ahead`; the last of them has `more` false, and a part
 * with `links` false holds the new paths alone, whose folders are made.
 */
export interface LinkerRequest {
  id: number;
  roots: string[];
  items: (string | number)[];
  ahead?: boolean;
  more?: boolean;
  links?: boolean;
}

/** placed[i]: 1 placed, 0 refused, 2 not reached (a file error stopped the batch before it). */
export interface LinkerReply {
  id: number;
  /** Of the last part placed ahead (which it marks): every folder made or checked when files were linked ahead; none when only folders were made. */
  made?: string[];
  placed: Uint8Array;
  copying?: boolean;
  error?: { message: string; code?: string; syscall?: string; path?: string };
}

if (!parentPort) throw new Error('linker-worker.ts runs as a thread of the Linker (linker.ts)');
const port = parentPort;
const data = workerData as LinkerData;
const NO_HARD_LINKS = new Set(data.noHardLinks);
const target = data.target;
// Paths given are plain relative ones (manifest paths, checked when read), so they are joined and
// cut by hand: path.join and path.dirname normalising each of 20,000 paths were a fifth of a
// thread's own time.
const under = (dir: string, path: string): string => `${dir}/${path}`;
const folderOf = (path: string): string => {
  const at = path.lastIndexOf('/');
  return at < 0 ? '.' : path.slice(0, at);
};
let copying = false;
// Folders made (or checked) before: by this thread, or by the one that made them ahead of the run.
// Kept as hashes (16 bytes a folder; an archive of 100,000 members has a folder each): a folder
// taken for made by a collision is not made, and its files, refused, are downloaded.
const made = new PathHashes();
for (const folder of data.made) made.add(folder);
// Their names too, only when files are placed ahead: the run is then told which folders to remove.
let madeNames: string[] | null = null;
// Per earlier snapshot: its folders known to be real folders (true) or not (false), and the
// names of the real folders inside a folder (as hashes: a file part's folder holds a folder per
// member). A member folder is asked about once, so only the folders above it are remembered.
const plainFolders = new Map<string, Map<string, boolean>>();
const subfolders = new Map<string, PathHashes>();

function subfoldersOf(root: string, folder: string): PathHashes {
  const path = folder === '.' ? root : under(root, folder);
  let names = subfolders.get(path);
  if (!names) {
    names = new PathHashes();
    // Read a few hundred entries at a time: the whole listing of 100,000 at once is 10 MB of entries.
    let dir: fs.Dir | null = null;
    try {
      dir = fs.opendirSync(path, { bufferSize: 256 });
      for (let entry = dir.readSync(); entry; entry = dir.readSync()) if (entry.isDirectory()) names.add(entry.name);
    } catch {
      // Not a folder (or gone): nothing in it is taken over.
    } finally {
      dir?.closeSync();
    }
    subfolders.set(path, names);
  }
  return names;
}

function isPlainIn(root: string, parent: string, name: string): boolean {
  return folderIsPlain(root, parent) && subfoldersOf(root, parent).has(name);
}

/** A folder, and every folder above it, are real folders (not links) inside the earlier snapshot. */
function folderIsPlain(root: string, folder: string): boolean {
  if (folder === '.') return true;
  let ofRoot = plainFolders.get(root);
  if (!ofRoot) plainFolders.set(root, (ofRoot = new Map()));
  let plain = ofRoot.get(folder);
  if (plain === undefined) {
    const parent = folderOf(folder);
    plain = isPlainIn(root, parent, folder.slice(parent === '.' ? 0 : parent.length + 1));
    ofRoot.set(folder, plain);
  }
  return plain;
}

/** The folder of a file given, as folderIsPlain would say, without remembering the folder itself. */
function sourceFolderIsPlain(root: string, from: string): boolean {
  const folder = folderOf(from);
  if (folder === '.') return true;
  const parent = folderOf(folder);
  return isPlainIn(root, parent, folder.slice(parent === '.' ? 0 : parent.length + 1));
}

function makeFolder(folder: string): void {
  if (folder === '.' || made.has(folder)) return;
  makeFolder(folderOf(folder));
  const path = under(target, folder);
  try {
    fs.mkdirSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const info = fs.lstatSync(path);
    if (info.isSymbolicLink()) throw Object.assign(new Error(`${path} is a link; a snapshot does not write through links`), { path });
    if (!info.isDirectory()) throw Object.assign(new Error(`${path} is a file where the snapshot needs a folder`), { path });
  }
  made.add(folder);
  madeNames?.push(folder);
}

function linkOrCopy(source: string, to: string): void {
  if (!copying) {
    try {
      fs.linkSync(source, to);
      return;
    } catch (error) {
      if (!NO_HARD_LINKS.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
      copying = true;
    }
  }
  fs.copyFileSync(source, to, fs.constants.COPYFILE_EXCL);
}

function place(root: string, from: string, to: string, size: number): boolean {
  if (!sourceFolderIsPlain(root, from)) return false;
  const source = under(root, from);
  let info: fs.Stats;
  try {
    info = fs.lstatSync(source);
  } catch {
    return false;
  }
  if (!info.isFile() || info.size !== size || changedOutside(info.ctimeMs, data.writes)) return false;
  makeFolder(folderOf(to));
  const path = under(target, to);
  try {
    linkOrCopy(source, path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return false;
    if (code !== 'EEXIST') throw error;
    // A link a stopped run placed ahead is the file itself.
    const there = fs.lstatSync(path);
    if (there.ino === info.ino && there.dev === info.dev) return true;
    fs.unlinkSync(path);
    linkOrCopy(source, path);
  }
  return true;
}

let linksAhead = true;

/**
 * Ahead of the listing, a file is placed only where nothing is yet, and only as a hard link: a
 * place taken (a download got there first) or a copy is left to the run, which knows more.
 */
function placeAhead(root: string, from: string, to: string, size: number): boolean {
  if (!linksAhead || !sourceFolderIsPlain(root, from)) return false;
  const source = under(root, from);
  const info = fs.lstatSync(source);
  if (!info.isFile() || info.size !== size || changedOutside(info.ctimeMs, data.writes)) return false;
  makeFolder(folderOf(to));
  try {
    fs.linkSync(source, under(target, to));
  } catch (error) {
    if (NO_HARD_LINKS.has((error as NodeJS.ErrnoException).code ?? '')) linksAhead = false;
    return false;
  }
  return true;
}

let targetMade = false;
let items: (string | number)[] = [];
/** A file's path in the earlier snapshot: sent empty when it is its path in the new one (flatten). */
const fromAt = (at: number): string => (items[at + 1] as string) || (items[at + 2] as string);
const post = (reply: LinkerReply): void => port.postMessage(reply);

port.on('message', (message: LinkerRequest) => {
  const { id, roots, ahead, more, links } = message;
  items = message.items;
  if (ahead) {
    if (!targetMade) {
      fs.mkdirSync(target, { recursive: true });
      targetMade = true;
    }
    // A folder or file that cannot be made ahead is left for the run, which then stops naming the
    // folder. Each part is answered with what was placed of it (1 placed, 0 not), so that the run
    // can record those while the next parts are placed; the last, empty, with the folders made.
    if (!more) {
      post({ id, made: madeNames?.splice(0) ?? [], placed: new Uint8Array(0) });
      madeNames = null;
      return;
    }
    if (links) madeNames ??= [];
    if (!links) {
      // Only the folders are made: the part is the paths inside the new snapshot alone.
      for (const to of items as string[]) {
        try {
          makeFolder(folderOf(to));
        } catch {
          // Left for the run (above).
        }
      }
      post({ id, placed: new Uint8Array(items.length) });
      return;
    }
    const placed = new Uint8Array(items.length / 4);
    for (let i = 0; i < items.length; i += 4) {
      try {
        if (placeAhead(roots[items[i] as number]!, fromAt(i), items[i + 2] as string, items[i + 3] as number)) placed[i / 4] = 1;
      } catch {
        // Left for the run (above).
      }
    }
    post({ id, placed });
    return;
  }
  const placed = new Uint8Array(items.length / 4).fill(2);
  try {
    for (let i = 0; i < placed.length; i += 1) {
      placed[i] = place(roots[items[4 * i] as number]!, fromAt(4 * i), items[4 * i + 2] as string, items[4 * i + 3] as number) ? 1 : 0;
    }
    post({ id, placed, copying });
  } catch (error) {
    const { message: text, code, syscall, path } = error as NodeJS.ErrnoException;
    post({ id, placed, copying, error: { message: text, code, syscall, path } });
  }
});
