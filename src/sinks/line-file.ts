/**
 * A run's manifest lines appended to a file as they come, a batch of them a write: the zip's and
 * the bucket archive's, sorted into the manifest at the end (writeSortedManifest).
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { formatLine, type ManifestLine } from './manifest.js';

/** Manifest lines appended to a file, a batch at a time, and read back in order. */
export class LineFile {
  private readonly fd: number;
  private batch: string[] = [];
  private size = 0;
  private closed = false;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'w', 0o600);
  }

  add(line: ManifestLine): void {
    if (this.closed) throw new Error(`${this.path} was closed: no more manifest lines can be added`);
    this.batch.push(formatLine(line));
    if (this.batch.length >= LINES_PER_WRITE) this.flush();
  }

  private flush(): void {
    if (this.batch.length === 0) return;
    const data = Buffer.from(this.batch.join(''));
    this.batch = [];
    for (let at = 0; at < data.length; ) {
      const bytes = writeSync(this.fd, data, at, data.length - at, this.size + at);
      if (bytes === 0) throw new Error(`only ${at} of ${data.length} bytes of manifest lines were written to ${this.path}`);
      at += bytes;
    }
    this.size += data.length;
  }

  /** Writes what is gathered, so that the file holds every line added so far. */
  sync(): void {
    if (!this.closed) this.flush();
  }

  /** Closes the file without writing what is gathered: the zip is dropped or let go. */
  drop(): void {
    this.batch = [];
    this.close();
  }

  /** Writes what is gathered and closes the file, which stays for the manifest to be sorted from. */
  close(): void {
    if (this.closed) return;
    try {
      this.flush();
    } finally {
      this.closed = true;
      closeSync(this.fd);
    }
  }
}

/** Manifest lines written to the file at a time. */
const LINES_PER_WRITE = 256;
