/**
 * The files a member already holds in a file part, compared by their bytes. Where the service's
 * rules stop an import (several records of a member hold one file name, so none of them can be
 * replaced; or a name would be added twice), a file whose very bytes the service already holds
 * under that name needs no request, and is no conflict. Only such files are downloaded, each once.
 */
import { createHash } from 'node:crypto';

export interface HeldFile {
  file_name: string;
  download_url: string;
}

export class HeldFiles {
  private readonly hashes = new Map<string, Promise<string | null>>();
  /** Held files already matched to a source file: two source files never match the same one. */
  private readonly matched = new Set<string>();

  constructor(private readonly byCode: ReadonlyMap<string, readonly HeldFile[]>) {}

  /**
   * Whether member `code` holds a file named `fileName` with the sha256 `digest` that no other
   * source file matched yet; a match is kept. A file that cannot be downloaded matches nothing.
   */
  async holdsSame(code: string, fileName: string, digest: string): Promise<boolean> {
    for (const held of this.byCode.get(code) ?? []) {
      if (held.file_name !== fileName || this.matched.has(held.download_url)) continue;
      if ((await this.hashOf(held.download_url)) !== digest) continue;
      this.matched.add(held.download_url);
      return true;
    }
    return false;
  }

  private hashOf(url: string): Promise<string | null> {
    let pending = this.hashes.get(url);
    if (!pending) {
      // A pre-signed storage URL: it takes no Service-Token. Not tied to the run's stop signal:
      // these are few files of at most 5 MB, and a download cut short would read as a conflict.
      pending = fetch(url)
        .then(async (res) => (res.ok ? createHash('sha256').update(Buffer.from(await res.arrayBuffer())).digest('hex') : null))
        .catch(() => null);
      this.hashes.set(url, pending);
    }
    return pending;
  }
}
