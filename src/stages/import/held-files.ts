/**
 * The files a member already holds in a file part, compared by their bytes. Where the service's
 * rules stop an import (several records of a member hold one file name, so none of them can be
 * replaced; or a name would be added twice), a file whose very bytes the service already holds
 * under that name needs no request, and is no conflict. Only such files are downloaded, each once.
 */
import { createHash } from 'node:crypto';

export class HeldFiles {
  /** Hashes of held files that several source files may be compared with (few: names a source repeats). */
  private readonly hashes = new Map<string, Promise<string | null>>();
  /** Held files already matched to a source file: two source files never match the same one. */
  private readonly matched = new Set<string>();

  /**
   * Whether one of the held files at `urls` (a member's files of one name) has the sha256
   * `digest` and was matched to no other source file yet; a match is kept when `shared` (other
   * source files have this name for this member too). A file that cannot be downloaded matches nothing.
   */
  async holdsSame(urls: readonly string[], digest: string, shared: boolean): Promise<boolean> {
    for (const url of urls) {
      if (this.matched.has(url)) continue;
      if ((await this.hashOf(url, shared)) !== digest) continue;
      if (shared) this.matched.add(url);
      return true;
    }
    return false;
  }

  private hashOf(url: string, keep: boolean): Promise<string | null> {
    const known = this.hashes.get(url);
    if (known) return known;
    // A pre-signed storage URL: it takes no Service-Token. Not tied to the run's stop signal:
    // these are files of at most 5 MB, and a download cut short would read as a conflict.
    const pending = fetch(url)
      .then(async (res) => (res.ok ? createHash('sha256').update(Buffer.from(await res.arrayBuffer())).digest('hex') : null))
      .catch(() => null);
    if (keep) this.hashes.set(url, pending);
    return pending;
  }
}
