/**
 * File contents of the company, by id. A blob is immutable: a new photo or attachment version is a
 * new blob, so a download URL stays tied to the file as it was when listed (api-v2.md 4.4 Members
 * 6, Sheets 6). Blobs live in memory, in a file (seed files, or every upload with --state-dir), or
 * are generated on demand (synthetic companies of many thousand files cost no memory).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type BlobSource =
  | { type: 'memory'; data: Buffer }
  | { type: 'file'; path: string }
  | { type: 'generated'; generator: string; args: unknown[] };

export interface BlobEntry {
  id: string;
  size: number;
  sha256?: string;
  source: BlobSource;
  /** Service time at which the blob stopped being the current version of a file. */
  releasedAt?: number;
}

/** Makes a blob's bytes: whole, or as parts to be sent one after the other (synthetic-files.ts). */
export type BlobGenerator = (...args: never[]) => Buffer | Buffer[];

const generators = new Map<string, BlobGenerator>();

/**
 * The blobs of a generated company, made from their ids (generate.ts): `entry` answers an id of
 * one of its files whether or not it is still current; the store forgets ids it has collected.
 */
export interface GeneratedBlobs {
  entry(id: string): BlobEntry | undefined;
  /** Every file still current, for saving. */
  all(): Iterable<BlobEntry>;
}

/** Registers a named generator; generated blobs store only the name and arguments. */
export function registerBlobGenerator(name: string, fn: BlobGenerator): void {
  generators.set(name, fn);
}

export class BlobStore {
  private readonly entries = new Map<string, BlobEntry>();
  /** Released entries, which `collect` walks: not every blob of a company of many thousand. */
  private readonly released = new Map<string, BlobEntry>();
  private counter = 0;
  private generated: GeneratedBlobs | undefined;
  /** Generated ids released and then collected: no URL may reach them again. */
  private readonly dropped = new Set<string>();

  /** @param dir where uploads are written (--state-dir); in memory when absent. */
  constructor(private readonly dir?: string) {
    if (dir) mkdirSync(dir, { recursive: true });
  }

  private nextId(): string {
    this.counter += 1;
    return `${Date.now().toString(36)}${this.counter.toString(36).padStart(4, '0')}${Math.random().toString(36).slice(2, 8)}`;
  }

  put(data: Buffer): BlobEntry {
    const id = this.nextId();
    const sha256 = createHash('sha256').update(data).digest('hex');
    let source: BlobSource = { type: 'memory', data };
    if (this.dir) {
      const path = join(this.dir, id);
      writeFileSync(path, data);
      source = { type: 'file', path };
    }
    const entry: BlobEntry = { id, size: data.length, sha256, source };
    this.entries.set(id, entry);
    return entry;
  }

  putFile(path: string, size: number): BlobEntry {
    const entry: BlobEntry = { id: this.nextId(), size, source: { type: 'file', path } };
    this.entries.set(entry.id, entry);
    return entry;
  }

  putGenerated(generator: string, args: unknown[], size: number): BlobEntry {
    if (!generators.has(generator)) throw new Error(`no blob generator named ${generator}`);
    const entry: BlobEntry = { id: this.nextId(), size, source: { type: 'generated', generator, args } };
    this.entries.set(entry.id, entry);
    return entry;
  }

  /** Answers the ids of a generated company's files (until `clear`). */
  generatedBy(generated: GeneratedBlobs): void {
    this.generated = generated;
  }

  private entry(id: string): BlobEntry | undefined {
    const entry = this.entries.get(id);
    if (entry || !this.generated || this.dropped.has(id)) return entry;
    return this.generated.entry(id);
  }

  /** Restores an entry saved by `entriesForSave` (state dir). */
  restore(entry: BlobEntry): void {
    this.entries.set(entry.id, entry);
    if (entry.releasedAt !== undefined) this.released.set(entry.id, entry);
  }

  get(id: string): BlobEntry | undefined {
    return this.entry(id);
  }

  read(id: string): Buffer {
    const parts = this.readParts(id);
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  /**
   * A blob's bytes as parts whose concatenation is the blob: storage sends them as they are, so a
   * generated file is never joined into a buffer of its own (synthetic-files.ts).
   */
  readParts(id: string): readonly Buffer[] {
    const entry = this.entry(id);
    if (!entry) throw new Error(`blob ${id} does not exist`);
    const source = entry.source;
    switch (source.type) {
      case 'memory':
        return [source.data];
      case 'file':
        return [readFileSync(source.path)];
      case 'generated': {
        const fn = generators.get(source.generator);
        if (!fn) throw new Error(`no blob generator named ${source.generator}`);
        const made = (fn as (...a: unknown[]) => Buffer | Buffer[])(...source.args);
        return Buffer.isBuffer(made) ? [made] : made;
      }
    }
  }

  sha256(id: string): string {
    const entry = this.entry(id);
    if (!entry) throw new Error(`blob ${id} does not exist`);
    entry.sha256 ??= createHash('sha256').update(this.read(id)).digest('hex');
    return entry.sha256;
  }

  /** Marks a blob as no longer current; it stays readable until `collect` drops it. */
  release(id: string, serviceNow: number): void {
    const entry = this.entry(id);
    if (entry && entry.releasedAt === undefined) {
      entry.releasedAt = serviceNow;
      // A generated file is held from its release on: URLs listed before still read it, until `collect`.
      this.entries.set(id, entry);
      this.released.set(id, entry);
    }
  }

  /** Drops blobs released before `before` (service ms): no valid URL can point at them any more. */
  collect(before: number): number {
    let dropped = 0;
    for (const [id, entry] of this.released) {
      if (entry.releasedAt! < before) {
        this.entries.delete(id);
        this.released.delete(id);
        if (this.generated?.entry(id)) this.dropped.add(id);
        dropped += 1;
      }
    }
    return dropped;
  }

  clear(): void {
    this.entries.clear();
    this.released.clear();
    this.dropped.clear();
    this.generated = undefined;
  }

  entriesForSave(): BlobEntry[] {
    const out: BlobEntry[] = [];
    for (const entry of this.entries.values()) {
      if (entry.source.type === 'memory') {
        // Only reachable without a state dir, where nothing is saved anyway.
        continue;
      }
      out.push(entry);
    }
    for (const entry of this.generated?.all() ?? []) if (!this.entries.has(entry.id)) out.push(entry);
    return out;
  }
}
