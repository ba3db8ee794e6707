/** The part of archiver 8 (ESM, `ZipArchive` class) that wds-files uses; @types/archiver is for v6. */
declare module 'archiver' {
  import type { Readable, Transform } from 'node:stream';

  export interface ZipArchiveOptions {
    zlib?: { level?: number };
    forceZip64?: boolean;
    store?: boolean;
    comment?: string;
  }

  export interface EntryData {
    name: string;
    date?: Date | string;
    mode?: number;
    store?: boolean;
    prefix?: string;
  }

  export class ZipArchive extends Transform {
    constructor(options?: ZipArchiveOptions);
    append(source: Readable | Buffer | string, data: EntryData): this;
    finalize(): Promise<void>;
    abort(): this;
    pointer(): number;
    on(event: 'entry', listener: (entry: EntryData) => void): this;
    on(event: 'warning' | 'error', listener: (error: Error & { code?: string }) => void): this;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }
}
