/**
 * One company of the emulator: its credentials and settings, its data and files, its tokens,
 * limit windows, tasks and counters.
 */
import { randomBytes } from 'node:crypto';
import type { Clock } from './clock.js';
import { BlobStore } from './blobs.js';
import { emptyCompanyData, type CompanyData, type StoredFile } from './model.js';
import { SlidingWindow, type CompanyLimits } from './limits.js';
import { TaskQueue, type TaskTiming } from './tasks.js';
import { Stats } from './stats.js';
import { TOKEN_LIFETIME_SECONDS, DOWNLOAD_URL_LIFETIME_SECONDS } from '../spec/limits.js';
import type { OperationId } from '../spec/operations.js';
import type { WebhookEvent } from '../spec/events.js';

export interface CompanySettings {
  /** Short name used by the control API (`?company=`). */
  name: string;
  consumerKey: string;
  consumerSecret: string;
  /** Operations switched on in the administrator screen; all when undefined (api-v2.md 1). */
  enabledOperations?: readonly OperationId[];
  limits: CompanyLimits;
  taskTiming: TaskTiming;
  /** 503 during the 01:00-01:30 backup window (api-v2.md 8). */
  maintenance: boolean;
  /** Lets webhook settings point at http://127.0.0.1 or localhost, for local testing. */
  allowHttpWebhooks: boolean;
  /** Loads the seed data into a fresh company (on start and on reset). */
  seed: (company: Company) => Promise<void> | void;
}

export interface TokenEntry {
  company: Company;
  expiresAt: number;
}

export type MemberEventSink = (company: Company, event: WebhookEvent, codes: string[]) => void;

export class Company {
  data: CompanyData;
  readonly blobs: BlobStore;
  readonly stats = new Stats();
  readonly tasks: TaskQueue;
  readonly requestWindow: SlidingWindow;
  readonly updateWindow: SlidingWindow;
  readonly tokenWindow: SlidingWindow;
  private changeListeners: (() => void)[] = [];

  constructor(
    readonly settings: CompanySettings,
    readonly clock: Clock,
    private readonly memberEvents: MemberEventSink,
    blobDir?: string,
  ) {
    this.blobs = new BlobStore(blobDir);
    this.data = emptyCompanyData(clock.format());
    this.requestWindow = new SlidingWindow(settings.limits.requestsPerHour, 3600_000);
    this.updateWindow = new SlidingWindow(settings.limits.updatesPerMinute, 60_000);
    this.tokenWindow = new SlidingWindow(settings.limits.tokensPerHour, 3600_000);
    this.tasks = new TaskQueue(clock, settings.taskTiming, () => this.data.next_ids.task++, (id, error) => {
      console.error(`[emulator] task ${id} of ${settings.name} failed:`, error);
    });
  }

  get name(): string {
    return this.settings.name;
  }

  /** The service time held while a task applies its changes. */
  #heldNow: string | null = null;

  now(): string {
    return this.#heldNow ?? this.clock.format();
  }

  /**
   * Applies a task's changes at one service time: they are one write, so every file and record it
   * touches carries the same `updated_at`, however long the loop over them takes.
   */
  atOneTime(apply: () => void): void {
    this.#heldNow = this.clock.format();
    try {
      apply();
    } finally {
      this.#heldNow = null;
    }
  }

  isEnabled(id: OperationId): boolean {
    return !this.settings.enabledOperations || this.settings.enabledOperations.includes(id);
  }

  /** Back to the seed: data, files, tasks, windows and counters. */
  async reset(): Promise<void> {
    // Tasks first: a job still running finishes on the old data and blobs, not on the new ones.
    await this.tasks.clear();
    this.blobs.clear();
    this.requestWindow.reset();
    this.updateWindow.reset();
    this.tokenWindow.reset();
    this.stats.reset();
    this.data = emptyCompanyData(this.now());
    await this.settings.seed(this);
  }

  /** Sends member events to the webhook settings of this company (api-v2.md section 6). */
  emitMemberEvent(event: WebhookEvent, codes: string[]): void {
    if (codes.length) this.memberEvents(this, event, codes);
  }

  onChange(listener: () => void): void {
    this.changeListeners.push(listener);
  }

  /** Called after every change of data (state-dir saving listens). */
  changed(): void {
    for (const listener of this.changeListeners) listener();
  }

  /** Makes a file the current version of something, releasing the one it replaces. */
  storeFile(data: Buffer, fileName: string, replaces?: StoredFile): StoredFile {
    const entry = this.blobs.put(data);
    if (replaces) this.blobs.release(replaces.blob, this.clock.now());
    return { blob: entry.id, file_name: fileName, size: entry.size, updated_at: this.now() };
  }

  releaseFile(file: StoredFile | undefined): void {
    if (file) this.blobs.release(file.blob, this.clock.now());
  }
}

/** Tokens of every company; a token names its company (api-v2.md 5.3). */
export class TokenRegistry {
  private readonly tokens = new Map<string, TokenEntry>();

  constructor(private readonly clock: Clock) {}

  issue(company: Company): { token: string; expiresIn: number } {
    const token = randomBytes(24).toString('base64url');
    this.tokens.set(token, { company, expiresAt: this.clock.now() + TOKEN_LIFETIME_SECONDS * 1000 });
    if (this.tokens.size > 50_000) this.prune();
    return { token, expiresIn: TOKEN_LIFETIME_SECONDS };
  }

  /** The company of a live token, or undefined for an unknown or expired one. */
  lookup(token: string): Company | undefined {
    const entry = this.tokens.get(token);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.clock.now()) {
      this.tokens.delete(token);
      return undefined;
    }
    return entry.company;
  }

  forget(company: Company): void {
    for (const [token, entry] of this.tokens) if (entry.company === company) this.tokens.delete(token);
  }

  private prune(): void {
    const now = this.clock.now();
    for (const [token, entry] of this.tokens) if (entry.expiresAt <= now) this.tokens.delete(token);
  }
}

export const URL_LIFETIME_MS = DOWNLOAD_URL_LIFETIME_SECONDS * 1000;
