/**
 * The zip sink: archiver's ZipArchive written to `<name>.partial` and renamed when complete.
 * Entries are appended one at a time, each waited for (archiver can stall with many live streams);
 * downloads finishing meanwhile wait in memory (small files) or in a spool file (large ones), so
 * memory stays bounded. Compressed types are stored, text deflated; zip64 is used by archiver when
 * sizes pass 4 GiB or entries 65,535. The manifest is the last entry.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { once } from 'node:events';
import { ZipArchive } from 'archiver';
import type { Readable } from 'node:stream';
import type { EntryWriter, ExportSink } from './sink.js';
import { shouldDeflate } from './sink.js';
import { MANIFEST_NAME, formatLine, sortLines, type ManifestLine } from './manifest.js';

/** Files up to this size wait for the zip in memory; larger ones in a spool file. */
const MEMORY_LIMIT = 1024 * 1024;

export class ZipSink implements ExportSink {
  private readonly partial: string;
  private readonly spoolDir: string;
  private readonly archive: ZipArchive;
  private readonly output: ReturnType<typeof createWriteStream>;
  private chain: Promise<void> = Promise.resolve();
  private failure: Error | null = null;
  private readonly lines: ManifestLine[] = [];
  private counter = 0;
  private readonly date = new Date();

  private constructor(readonly target: string) {
    this.partial = `${target}.partial`;
    this.spoolDir = `${target}.partial.d`;
    this.archive = new ZipArchive({ zlib: { level: 6 } });
    this.output = createWriteStream(this.partial);
    this.archive.on('error', (error) => {
      this.failure = error;
    });
    this.archive.on('warning', (error) => {
      this.failure = error;
    });
    this.output.on('error', (error) => {
      this.failure = error;
    });
    this.archive.pipe(this.output);
  }

  static async create(file: string): Promise<ZipSink> {
    await mkdir(dirname(file) || '.', { recursive: true });
    await rm(`${file}.partial.d`, { recursive: true, force: true });
    await mkdir(`${file}.partial.d`);
    return new ZipSink(file);
  }

  async intactFromEarlierRun(): Promise<Map<string, ManifestLine>> {
    return new Map();
  }

  /** Appends one entry and resolves when archiver has taken all of it. */
  private append(source: Readable | Buffer, name: string): Promise<void> {
    const run = this.chain.then(async () => {
      if (this.failure) throw this.failure;
      const entered = once(this.archive, 'entry');
      this.archive.append(source, { name, store: !shouldDeflate(name), date: this.date });
      await entered;
      if (this.failure) throw this.failure;
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  async open(path: string, expectedSize?: number): Promise<EntryWriter> {
    const spool = expectedSize !== undefined && expectedSize > MEMORY_LIMIT;
    this.counter += 1;
    const spoolPath = join(this.spoolDir, String(this.counter));
    let chunks: Buffer[] = [];
    let handle: FileHandle | null = spool ? await open(spoolPath, 'w') : null;
    return {
      write: async (chunk) => {
        if (handle) await handle.write(chunk);
        else chunks.push(chunk);
      },
      restart: async () => {
        chunks = [];
        if (handle) await handle.truncate(0);
      },
      commit: async () => {
        if (!handle) {
          const data = Buffer.concat(chunks);
          chunks = [];
          await this.append(data, path);
          return;
        }
        await handle.close();
        handle = null;
        await this.append(createReadStream(spoolPath), path);
        await rm(spoolPath, { force: true });
      },
      abort: async () => {
        chunks = [];
        if (handle) await handle.close();
        handle = null;
        await rm(spoolPath, { force: true });
      },
    };
  }

  async record(line: ManifestLine): Promise<void> {
    this.lines.push(line);
  }

  async finish(): Promise<void> {
    const manifest = Buffer.from(sortLines(this.lines).map(formatLine).join(''));
    await this.append(manifest, MANIFEST_NAME);
    const closed = once(this.output, 'close');
    await this.archive.finalize();
    await closed;
    if (this.failure) throw this.failure;
    await rename(this.partial, this.target);
    await rm(this.spoolDir, { recursive: true, force: true });
  }

  async abort(): Promise<void> {
    this.archive.abort();
    this.output.destroy();
    await rm(this.partial, { force: true });
    await rm(this.spoolDir, { recursive: true, force: true });
  }
}
