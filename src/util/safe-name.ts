/**
 * File names from the service made safe for every file system (DESIGN.md section 4): no
 * separators, no `.` or `..`, no control characters or characters Windows refuses, no names
 * Windows reserves, no trailing dots or spaces, at most 255 UTF-8 bytes. The manifest keeps the
 * original name.
 */
const WINDOWS_RESERVED = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$/i;
// Control characters, the separators, and what Windows forbids in names.
// eslint-disable-next-line no-control-regex
const FORBIDDEN = /[\u0000-\u001f\u007f<>:"/\\|?*]/g;
const MAX_BYTES = 255;

export function safeName(name: string): string {
  let out = name.normalize('NFC').replace(FORBIDDEN, '_');
  out = out.replace(/[. ]+$/, (m) => '_'.repeat(m.length));
  if (out === '' || /^\.+$/.test(out)) out = out.replace(/\./g, '_') || '_';
  if (WINDOWS_RESERVED.test(out)) out = `_${out}`;
  return truncateBytes(out, MAX_BYTES);
}

/** Extensions longer than this are not worth keeping whole when a name must be cut. */
const MAX_EXT_BYTES = 32;

/** The name's extension (with its dot) when it is short enough to keep, else ''. */
function extensionToKeep(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 && Buffer.byteLength(name.slice(dot)) <= MAX_EXT_BYTES ? name.slice(dot) : '';
}

/** The longest start of `text` within `max` UTF-8 bytes, never splitting a character. */
function cutToBytes(text: string, max: number): string {
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    bytes += Buffer.byteLength(char);
    if (bytes > max) break;
    end += char.length;
  }
  return text.slice(0, end);
}

/** Cuts a name to `max` UTF-8 bytes, keeping its extension and never splitting a character. */
function truncateBytes(name: string, max: number): string {
  if (Buffer.byteLength(name) <= max) return name;
  const ext = extensionToKeep(name);
  return cutToBytes(name.slice(0, name.length - ext.length), max - Buffer.byteLength(ext)) + ext;
}

/**
 * Hands out paths so that two items never land on the same one, also on file systems that ignore
 * case: the second `a.pdf` in a folder becomes `a (2).pdf`. The paths in use are kept as 64-bit
 * hashes of their lower-case text (PathHashes), not as strings: an export of 200,000 files held
 * 90 bytes a path for the whole run. Two paths with one hash (about one chance in 10^9 at a
 * million paths) only number a file that needed no number.
 */
export class PathAllocator {
  private readonly taken = new PathHashes();

  /** Reserves a path already on disk or already given out. */
  reserve(path: string): void {
    this.taken.add(path.toLowerCase());
  }

  allocate(dir: string, name: string): string {
    const safe = safeName(name);
    const first = `${dir}/${safe}`;
    if (this.taken.add(first.toLowerCase())) return first;
    const ext = extensionToKeep(safe);
    const stem = safe.slice(0, safe.length - ext.length);
    for (let n = 2; ; n += 1) {
      // The number must survive the length limit: the stem is cut to make room for it.
      const suffix = ` (${n})`;
      const candidate = `${dir}/${cutToBytes(stem, MAX_BYTES - Buffer.byteLength(suffix + ext))}${suffix}${ext}`;
      if (this.taken.add(candidate.toLowerCase())) return candidate;
    }
  }
}

/** A set of texts kept as two 32-bit hashes each, in an open-addressed table of typed arrays (8 bytes a slot). */
export class PathHashes {
  private table = new Uint32Array(2 * 1024);
  private count = 0;

  /** Adds `text`; false when it (or a text of the same hashes) was there already. */
  add(text: string): boolean {
    const [a, b] = hashesOf(text);
    if (!this.insert(a, b)) return false;
    this.count += 1;
    if (this.count * 2 > this.table.length / 2) this.grow();
    return true;
  }

  /** Whether `text` (or a text of the same hashes) was added. */
  has(text: string): boolean {
    const [a, b] = hashesOf(text);
    const slots = this.table.length / 2;
    for (let at = a & (slots - 1); ; at = (at + 1) & (slots - 1)) {
      const y = this.table[2 * at + 1]!;
      if (y === 0) return false;
      if (y === b && this.table[2 * at] === a) return true;
    }
  }

  /** How many texts were added. */
  get size(): number {
    return this.count;
  }

  /** Puts (a, b) in the table; false when it is there already. */
  private insert(a: number, b: number): boolean {
    const slots = this.table.length / 2;
    for (let at = a & (slots - 1); ; at = (at + 1) & (slots - 1)) {
      const x = this.table[2 * at]!;
      const y = this.table[2 * at + 1]!;
      if (y === 0) {
        this.table[2 * at] = a;
        this.table[2 * at + 1] = b;
        return true;
      }
      if (x === a && y === b) return false;
    }
  }

  private grow(): void {
    const old = this.table;
    this.table = new Uint32Array(old.length * 2);
    for (let at = 0; at < old.length; at += 2) if (old[at + 1] !== 0) this.insert(old[at]!, old[at + 1]!);
  }
}

/** Two 32-bit hashes of a text; the second never 0 (an empty slot of PathHashes). */
function hashesOf(text: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return [a >>> 0, b >>> 0 || 1];
}
