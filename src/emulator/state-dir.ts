/**
 * `--state-dir DIR`: the emulator keeps each company's data and files there and loads them on the
 * next start, so a person can stop and restart it without losing what they uploaded. Data is
 * written as JSON (temporary name, then rename) shortly after each change; files as one file per
 * blob.
 */
import { mkdirSync } from 'node:fs';
import { readdir, readFile, rename, writeFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Company } from './company.js';
import type { BlobEntry } from './blobs.js';
import { completeMemberIds, type CompanyData } from './model.js';

interface SavedState {
  version: 1;
  data: CompanyData;
  blobs: BlobEntry[];
}

export class StateSaver {
  private readonly timers = new Map<Company, NodeJS.Timeout>();
  private readonly writing = new Set<Promise<void>>();
  /**
   * Saves run one after another: a timer's save still writing when `flush` saves again would share
   * its temporary file, and the older state could be renamed over the newer one.
   */
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  private companyDir(name: string): string {
    return join(this.dir, encodeURIComponent(name));
  }

  blobDir(name: string): string {
    return join(this.companyDir(name), 'blobs');
  }

  async load(company: Company): Promise<boolean> {
    let text: string;
    try {
      text = await readFile(join(this.companyDir(company.name), 'state.json'), 'utf8');
    } catch {
      return false;
    }
    const saved = JSON.parse(text) as SavedState;
    if (saved.version !== 1) throw new Error(`state of company "${company.name}" has an unknown version; remove ${this.dir} to start afresh`);
    company.data = saved.data;
    completeMemberIds(company.data);
    // A released version was kept only for URLs listed before its release; URLs are signed with a
    // key made at each start, so after a restart none of them can reach it any more.
    const current = saved.blobs.filter((entry) => entry.releasedAt === undefined);
    for (const entry of current) company.blobs.restore(entry);
    await this.sweep(company.name, new Set(current.map((b) => b.id)));
    return true;
  }

  /**
   * Removes blob files that no current file names: replaced versions, and the files of a state
   * that was reset. Without this the directory grows with every upload.
   */
  private async sweep(name: string, keep: Set<string>): Promise<void> {
    const dir = this.blobDir(name);
    let files: string[];
    try {
      files = await readdir(dir);
    } catch {
      return;
    }
    await Promise.all(files.filter((file) => !keep.has(file)).map((file) => rm(join(dir, file), { force: true })));
  }

  saveSoon(company: Company): void {
    if (this.timers.has(company)) return;
    this.timers.set(
      company,
      setTimeout(() => {
        this.timers.delete(company);
        const done = this.save(company).finally(() => this.writing.delete(done));
        this.writing.add(done);
      }, 200),
    );
  }

  async flush(): Promise<void> {
    for (const [company, timer] of this.timers) {
      clearTimeout(timer);
      this.timers.delete(company);
      await this.save(company);
    }
    await Promise.allSettled([...this.writing]);
  }

  async forget(company: Company): Promise<void> {
    await rm(this.companyDir(company.name), { recursive: true, force: true });
  }

  private save(company: Company): Promise<void> {
    const next = this.queue.then(() => this.write(company));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async write(company: Company): Promise<void> {
    const dir = this.companyDir(company.name);
    mkdirSync(dir, { recursive: true });
    const state: SavedState = { version: 1, data: company.data, blobs: company.blobs.entriesForSave() };
    const target = join(dir, 'state.json');
    const temp = `${target}.${process.pid}.tmp`;
    await writeFile(temp, JSON.stringify(state));
    await rename(temp, target);
  }
}
