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
 * case: the second `a.pdf` in a folder becomes `a (2).pdf`.
 */
export class PathAllocator {
  private readonly taken = new Set<string>();

  /** Reserves a path already on disk or already given out. */
  reserve(path: string): void {
    this.taken.add(path.toLowerCase());
  }

  allocate(dir: string, name: string): string {
    const safe = safeName(name);
    const first = `${dir}/${safe}`;
    if (!this.taken.has(first.toLowerCase())) {
      this.taken.add(first.toLowerCase());
      return first;
    }
    const ext = extensionToKeep(safe);
    const stem = safe.slice(0, safe.length - ext.length);
    for (let n = 2; ; n += 1) {
      // The number must survive the length limit: the stem is cut to make room for it.
      const suffix = ` (${n})`;
      const candidate = `${dir}/${cutToBytes(stem, MAX_BYTES - Buffer.byteLength(suffix + ext))}${suffix}${ext}`;
      if (!this.taken.has(candidate.toLowerCase())) {
        this.taken.add(candidate.toLowerCase());
        return candidate;
      }
    }
  }
}
