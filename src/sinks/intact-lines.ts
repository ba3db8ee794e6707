/**
 * The lines of an earlier run's files that a rerun found intact, kept on disk (issue 46): written
 * in the order they are read (an earlier manifest read in order, so the file is in manifest order
 * too) to `<dir>/manifest.jsonl`, then looked up through a ManifestIndex, a pread a lookup. A
 * nightly export into the same folder or zip then holds about 30 bytes a file, not each line.
 */
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { MANIFEST_NAME, formatLine, type ManifestLine } from './manifest.js';
import { ManifestIndex } from './manifest-index.js';

/** Bytes gathered before a write. */
const WRITE_BYTES = 256 * 1024;

export class IntactLines {
  private part: string[] = [];
  private size = 0;

  private constructor(private readonly handle: FileHandle, readonly dir: string) {}

  /** Starts `<dir>/manifest.jsonl` afresh (the folder is made if missing). */
  static async create(dir: string): Promise<IntactLines> {
    await mkdir(dir, { recursive: true });
    return new IntactLines(await open(join(dir, MANIFEST_NAME), 'w', 0o600), dir);
  }

  /** The file the lines are written to. */
  get path(): string {
    return join(this.dir, MANIFEST_NAME);
  }

  async add(line: ManifestLine): Promise<void> {
    const text = formatLine(line);
    this.part.push(text);
    this.size += text.length;
    if (this.size >= WRITE_BYTES) await this.flush();
  }

  private async flush(): Promise<void> {
    const data = Buffer.from(this.part.join(''));
    this.part = [];
    this.size = 0;
    for (let at = 0; at < data.length; ) {
      const { bytesWritten } = await this.handle.write(data, at);
      if (bytesWritten === 0) throw new Error(`only ${at} of ${data.length} bytes of intact lines were written to ${this.path}`);
      at += bytesWritten;
    }
  }

  /** Writes what is gathered, closes the file, and answers its lines by key. */
  async index(): Promise<ManifestIndex> {
    try {
      await this.flush();
    } finally {
      await this.handle.close();
    }
    return ManifestIndex.read([this.dir]);
  }

  /** Closes the file without reading it (the check failed). */
  async discard(): Promise<void> {
    await this.handle.close().catch(() => undefined);
  }
}
