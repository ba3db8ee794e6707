/**
 * The webhook inbox (DESIGN.md section 15): a folder holding `events.jsonl`, one JSON line per
 * member event, appended and fsynced before `append` resolves. The service never resends a
 * delivery, so an event the receiver acknowledged must survive any crash that follows the answer.
 *
 * - Group commit: appends that arrive while a write is under way wait for it and then go out
 *   together, in one write and one fsync, so many concurrent deliveries cost few fsyncs.
 * - The same event twice is stored once. Its key (the line's `id`) is the sha256 of the event name,
 *   its `event_time` and its codes sorted without repeats: a delivery resent, or sent twice by two
 *   webhook settings naming this receiver, carries the same key.
 * - Several processes may append (`serve` and `reconcile`): each append holds `.events.lock` for
 *   its write and fsync, and first reads what the others appended since, so its index of keys is
 *   whole before it decides what is new.
 * - A line cut short by a killed writer is skipped by readers, and the next append starts on a
 *   new line. A failed write is cut back off, so a refused append leaves nothing behind.
 */
import { createHash } from 'node:crypto';
import { createReadStream, fstatSync, ftruncateSync, readSync, statSync, writeSync } from 'node:fs';
import { mkdir, open, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { WEBHOOK_EVENTS, type WebhookEvent } from '../spec/events.js';
import { stateFolder } from '../util/xdg.js';
import { sweepLockLeftovers, withInboxLock } from './inbox-lock.js';

/** The inbox's file of events, in its folder. */
export const INBOX_FILE = 'events.jsonl';
const LOCK_FILE = '.events.lock';
/** How long an append waits for another process's append before it fails (and the delivery gets 503). */
const LOCK_WAIT_MS = 5_000;
/** Groups written whose fsync has not ended yet, at most: beyond, the next group waits for the disk. */
const SYNCS_UNDER_WAY = 4;

/** Where an event came from: a webhook delivery, or a reconciliation that found a change no delivery announced. */
export type InboxSource = 'delivery' | 'reconciled';

/** A member event as the inbox takes it. */
export interface InboxEventInput {
  /** `member_created`, `member_updated` or `member_deleted`. */
  event: WebhookEvent;
  /** As the service wrote it: `YYYY-MM-DD HH:MM:SS`, service local time. */
  event_time: string;
  /** The members' codes. */
  codes: string[];
}

/** One line of the inbox: the event, when it was stored, and where it came from. */
export interface InboxEvent extends InboxEventInput {
  /** The event's key: equal for the same event delivered twice (see {@link eventKey}). */
  id: string;
  /** When this receiver stored it (ISO 8601, UTC). */
  received_at: string;
  /** `delivery`, or `reconciled` when a reconciliation found a change no delivery announced. */
  source: InboxSource;
}

const inboxEventSchema: z.ZodType<InboxEvent> = z.object({
  id: z.string(),
  event: z.enum(WEBHOOK_EVENTS),
  event_time: z.string(),
  codes: z.array(z.string()),
  received_at: z.string(),
  source: z.enum(['delivery', 'reconciled']),
});

/** What an append did: events newly stored, and events the inbox held already. */
export interface AppendResult {
  /** The events written now, in the order given. */
  stored: InboxEvent[];
  /** How many of the events given the inbox held already (or held twice), and were not written again. */
  duplicates: number;
}

/** `$XDG_STATE_HOME/wds-files/webhooks`, beside the import journals. */
export function defaultInboxFolder(): string {
  return join(stateFolder(), 'webhooks');
}

/** The key that makes the same event delivered twice one line. */
export function eventKey(event: InboxEventInput): string {
  const codes = [...new Set(event.codes)].sort();
  return createHash('sha256').update(JSON.stringify([event.event, event.event_time, codes])).digest('hex').slice(0, 32);
}

/** A group written: its results, its bytes, and the file it went to (whose fsync makes it durable). */
interface Written {
  results: AppendResult[];
  bytes: number;
  handle: FileHandle;
}

interface Pending {
  events: InboxEventInput[];
  source: InboxSource;
  resolve: (result: AppendResult) => void;
  reject: (error: Error) => void;
}

/**
 * The inbox: open it with {@link WebhookInbox.open}, store events with `append` (resolves once they
 * are on disk), read them with `readEvents`. Several processes may hold one inbox at once.
 */
export class WebhookInbox {
  /** Bytes of the file read into the index (always at a line's end). */
  private end = 0;
  private readonly keys = new Set<string>();
  private queue: Pending[] = [];
  private committing: Promise<void> | null = null;
  private closed = false;
  private writes = 0;
  /** The fsyncs of groups written, not ended yet. */
  private readonly syncing = new Set<Promise<void>>();
  /** The file's size as the last catch-up found it. */
  private size0 = 0;

  private constructor(
    /** The inbox folder. */
    readonly folder: string,
    private handle: FileHandle,
    private ino: number,
  ) {}

  /** Opens (making it when missing) the inbox in `folder`, and reads its keys. */
  static async open(folder: string = defaultInboxFolder()): Promise<WebhookInbox> {
    await mkdir(folder, { recursive: true, mode: 0o700 });
    await sweepLockLeftovers(join(folder, LOCK_FILE));
    const { handle, ino } = await openFile(folder);
    const inbox = new WebhookInbox(folder, handle, ino);
    inbox.catchUp();
    return inbox;
  }

  /** The path of the events file. */
  get file(): string {
    return join(this.folder, INBOX_FILE);
  }

  /** Events in the inbox, as far as this process has read or written it. */
  get size(): number {
    return this.keys.size;
  }

  /** Bytes of the events file, as far as this process has read or written it. */
  get bytes(): number {
    return this.end;
  }

  /** Writes (each one fsync) this process made: fewer than its appends when deliveries arrive together. */
  get commits(): number {
    return this.writes;
  }

  /** Whether the inbox already holds this event. */
  has(event: InboxEventInput): boolean {
    return this.keys.has(eventKey(event));
  }

  /**
   * Stores the events; resolves once they are on disk (fsynced), with those that were new. Rejects
   * (storing none of them) when the file cannot be written.
   */
  append(events: InboxEventInput[], source: InboxSource): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new Error(`the webhook inbox ${this.folder} is closed`));
    return new Promise((resolve, reject) => {
      this.queue.push({ events, source, resolve, reject });
      this.committing ??= this.commitLoop();
    });
  }

  /** The events, oldest first; see `readInboxEvents`. */
  readEvents(options: ReadOptions = {}): AsyncIterable<InboxEvent> {
    return readInboxEvents(this.folder, options);
  }

  /** Waits for the appends under way, then closes the file. */
  async close(): Promise<void> {
    this.closed = true;
    await this.committing;
    await this.handle.close();
  }

  private async commitLoop(): Promise<void> {
    // One turn of the event loop first, so that the deliveries read meanwhile join the first write.
    await new Promise((resolve) => setImmediate(resolve));
    const syncing = this.syncing;
    while (this.queue.length || syncing.size) {
      if (!this.queue.length || syncing.size >= SYNCS_UNDER_WAY) {
        await Promise.race(syncing);
        continue;
      }
      const batch = this.queue;
      this.queue = [];
      let written: Written;
      try {
        written = await withInboxLock(join(this.folder, LOCK_FILE), LOCK_WAIT_MS, () => this.write(batch));
      } catch (error) {
        for (const pending of batch) pending.reject(error as Error);
        continue;
      }
      // The next group is written while this one's fsync is under way: each is answered once its own fsync, which covers it, ends.
      const durable = (written.bytes ? written.handle.datasync() : Promise.resolve()).then(
        () => batch.forEach((pending, i) => pending.resolve(written.results[i]!)),
        (error: Error) => batch.forEach((pending) => pending.reject(error)),
      );
      syncing.add(durable);
      void durable.then(() => syncing.delete(durable));
    }
    this.committing = null;
  }

  /** Under the lock: what others appended, then the new lines in one write. */
  private async write(batch: Pending[]): Promise<Written> {
    await this.reopenIfReplaced();
    const torn = this.catchUp();
    const receivedAt = new Date().toISOString();
    const fresh = new Set<string>();
    const results = batch.map(({ events, source }) => {
      const result: AppendResult = { stored: [], duplicates: 0 };
      for (const input of events) {
        const id = eventKey(input);
        if (this.keys.has(id) || fresh.has(id)) {
          result.duplicates += 1;
          continue;
        }
        fresh.add(id);
        result.stored.push({ id, event: input.event, event_time: input.event_time, codes: input.codes, received_at: receivedAt, source });
      }
      return result;
    });
    const lines = results.flatMap((result) => result.stored.map((event) => JSON.stringify(event)));
    if (!lines.length) return { results, bytes: 0, handle: this.handle };
    const text = Buffer.from(`${torn ? '\n' : ''}${lines.join('\n')}\n`);
    // Under the lock nobody else writes: the file ends where the catch-up found it.
    const start = this.size0;
    const fd = this.handle.fd;
    try {
      // To the page cache, and quick; only the fsync waits for the disk, off the event loop.
      for (let done = 0; done < text.length;) done += writeSync(fd, text, done, text.length - done);
    } catch (error) {
      // What was written of a refused append is removed, so that it does not turn up later as stored.
      try {
        ftruncateSync(fd, start);
      } catch {
        // The next append's catch-up reads what stayed, and its line break keeps the lines apart.
      }
      throw error;
    }
    this.end = start + text.length;
    this.writes += 1;
    for (const id of fresh) this.keys.add(id);
    return { results, bytes: text.length, handle: this.handle };
  }

  /**
   * Reads the lines appended since `end` into the index. Answers whether the file ends in a line
   * cut short: only a killed writer leaves one, as a live one writes while holding the lock.
   */
  private catchUp(): boolean {
    const fd = this.handle.fd;
    const size = fstatSync(fd).size;
    this.size0 = size;
    if (size < this.end) {
      // Cut back by hand: read it again.
      this.end = 0;
      this.keys.clear();
    }
    if (size === this.end) return false;
    const tail = Buffer.alloc(size - this.end);
    for (let got = 0; got < tail.length;) {
      const read = readSync(fd, tail, got, tail.length - got, this.end + got);
      if (!read) break;
      got += read;
    }
    const lastBreak = tail.lastIndexOf(0x0a);
    for (const line of tail.subarray(0, lastBreak + 1).toString('utf8').split('\n')) {
      const event = parseLine(line);
      if (event) this.keys.add(event.id);
    }
    this.end += lastBreak + 1;
    return lastBreak + 1 < tail.length;
  }

  /** An inbox file removed or renamed by hand while open: later events go to the new one, not the lost inode. */
  private async reopenIfReplaced(): Promise<void> {
    let now: number | null = null;
    try {
      now = statSync(this.file).ino;
    } catch {
      // Gone: made again below.
    }
    if (now === this.ino) return;
    // The old file is closed once the fsyncs under way on it have ended.
    const old = this.handle;
    void Promise.allSettled([...this.syncing]).then(() => old.close());
    ({ handle: this.handle, ino: this.ino } = await openFile(this.folder));
    this.end = 0;
    this.keys.clear();
  }
}

async function openFile(folder: string): Promise<{ handle: FileHandle; ino: number }> {
  const path = join(folder, INBOX_FILE);
  const existed = await stat(path).then(() => true, () => false);
  const handle = await open(path, 'a+', 0o600);
  // A new file's name is durable once its folder is.
  if (!existed) await syncFolder(folder);
  return { handle, ino: (await handle.stat()).ino };
}

async function syncFolder(folder: string): Promise<void> {
  const dir = await open(folder, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

function parseLine(line: string): InboxEvent | null {
  if (!line.trim()) return null;
  try {
    const parsed = inboxEventSchema.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Which events {@link readInboxEvents} yields. */
export interface ReadOptions {
  /** Only events received at or after this time. */
  since?: Date;
}

/**
 * The inbox's events, oldest first, read as the file grows; lines that are not whole events (one
 * cut short by a killed writer) are skipped. A folder without an inbox yields nothing.
 */
export async function* readInboxEvents(folder: string, options: ReadOptions = {}): AsyncGenerator<InboxEvent> {
  const since = options.since?.getTime();
  let rest = '';
  let stream;
  try {
    stream = createReadStream(join(folder, INBOX_FILE), { encoding: 'utf8' });
    for await (const chunk of stream as AsyncIterable<string>) {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop()!;
      for (const line of lines) {
        const event = parseLine(line);
        if (event && (since === undefined || Date.parse(event.received_at) >= since)) yield event;
      }
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  } finally {
    stream?.destroy();
  }
  // `rest` has no line break after it: an append cut short, or one not finished yet.
}
