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

/** Cuts a name to `max` UTF-8 bytes, keeping its extension and never splitting a character. */
function truncateBytes(name: string, max: number): string {
  if (Buffer.byteLength(name) <= max) return name;
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 && Buffer.byteLength(name.slice(dot)) <= 32 ? name.slice(dot) : '';
  let stem = ext ? name.slice(0, dot) : name;
  const room = max - Buffer.byteLength(ext);
  while (Buffer.byteLength(stem) > room) stem = [...stem].slice(0, -1).join('');
  return stem + ext;
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
    const dot = safe.lastIndexOf('.');
    const stem = dot > 0 ? safe.slice(0, dot) : safe;
    const ext = dot > 0 ? safe.slice(dot) : '';
    for (let n = 2; ; n += 1) {
      const candidate = `${dir}/${safeName(`${stem} (${n})${ext}`)}`;
      if (!this.taken.has(candidate.toLowerCase())) {
        this.taken.add(candidate.toLowerCase());
        return candidate;
      }
    }
  }
}
