/**
 * Reconciliation (DESIGN.md section 15): the service never resends a delivery, so the members it
 * lists now are compared with the last list seen, and each change that no event in the inbox
 * announced since then is stored there, marked `reconciled`.
 *
 * - The last list is kept beside the inbox (`members.json`: each member's code and a hash of what
 *   the listing shows of it), replaced whole (temporary file, fsync, rename) once the events found
 *   are in the inbox: a reconcile cut short in between finds the same changes again, and then sees
 *   them announced by its own earlier events.
 * - A member is "updated" when the hash of its listed fields changed. The listing has no time per
 *   member, only one for all members; the fields the service computes (age, years of service) and
 *   the photo's time are left out of the hash, since they change without a member event.
 * - The first reconcile of an inbox (no last list) only records the list: with nothing to compare
 *   with, every member would look new.
 * - Two reconciles of one inbox (serve's own and a `webhook reconcile`) take turns under a lock;
 *   `serve` appending deliveries meanwhile is safe, as the inbox takes appends from several processes.
 */
import { lockTarget } from '../pipelines/target-lock.js';
import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { WdsClient } from '../client/client.js';
import type { WebhookEvent } from '../spec/events.js';
import type { Member } from '../spec/schemas.js';
import { writeFileAtomically } from '../sinks/atomic-file.js';
import { readInboxEvents, type InboxEvent, type InboxEventInput, type WebhookInbox } from './inbox.js';

/** The last list, beside the inbox's events. */
export const MEMBER_LIST_FILE = 'members.json';
/** What reconcile locks: `.reconcile` in the inbox folder, whose lock file is `.reconcile.lock`. */
const LOCKED = '.reconcile';
/** A reconcile waits this long for another one of the same inbox to end. */
const LOCK_WAIT_MS = 10 * 60_000;
/** Fields the service computes or that change without a member event (the photo): not part of "updated". */
const UNTRACKED_FIELDS = new Set(['age', 'years_of_service', 'face_image']);

const memberListSchema = z.object({
  version: z.literal(1),
  /** When the list was asked for, by this machine's clock (ISO 8601): events received since are "since the last list". */
  listed_at: z.string(),
  /** The listing's own `updated_at` (service time), when it gave one. */
  service_updated_at: z.string().nullable(),
  /** Each member's code, with the hash of its listed fields. */
  members: z.record(z.string(), z.string()),
});
type MemberList = z.infer<typeof memberListSchema>;

export interface ReconcileResult {
  /** No earlier list: this one was recorded, and nothing was stored. */
  baseline: boolean;
  /** Members the service lists now. */
  members: number;
  /** Changes since the last list, by kind (codes), announced or not. */
  created: string[];
  updated: string[];
  deleted: string[];
  /** Changes an event in the inbox had announced already. */
  announced: number;
  /** Events stored now, marked `reconciled`. */
  stored: InboxEvent[];
  /** When the list now kept was asked for. */
  listed_at: string;
  /** When the previous list was, if any. */
  previous_listed_at: string | null;
}

export interface ReconcileOptions {
  signal?: AbortSignal;
  /** How the lock's holder is named for another run that finds it busy. */
  command?: string;
  /** Called once when another reconcile holds the lock and this one waits. */
  onWait?: (message: string) => void;
  /** This machine's clock, for `listed_at`. */
  now?: () => Date;
  /** The service's time zone, for an event's time when the listing gives none. Default Asia/Tokyo. */
  timeZone?: string;
}

/** `YYYY-MM-DD HH:MM:SS` in `timeZone`, as the service writes times. */
export function serviceTime(at: Date, timeZone: string): string {
  return new Intl.DateTimeFormat('sv-SE', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }).format(at);
}

/** The hash of what the listing shows of a member, keys sorted, untracked fields left out. */
export function memberHash(member: Member): string {
  return createHash('sha256').update(canonical(member, true)).digest('hex').slice(0, 32);
}

function canonical(value: unknown, top = false): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonical(v)).join(',')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).filter((key) => !(top && UNTRACKED_FIELDS.has(key))).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** The last list of an inbox folder, or null before the first reconcile. A damaged one is an error naming the file. */
export async function readMemberList(folder: string): Promise<MemberList | null> {
  const file = join(folder, MEMBER_LIST_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not JSON; move it aside for the next reconcile to record a new baseline (changes since the last one would then not be found)`);
  }
  const parsed = memberListSchema.safeParse(json);
  if (!parsed.success) throw new Error(`${file} is not a member list of wds-files (${parsed.error.issues[0]?.message ?? 'unexpected shape'}); move it aside for the next reconcile to record a new baseline`);
  return parsed.data;
}

/**
 * Lists the members, compares them with the last list, stores the changes no event announced in
 * `inbox`, and keeps the new list. See the file's comment for the rules.
 */
export async function reconcile(client: WdsClient, inbox: WebhookInbox, options: ReconcileOptions = {}): Promise<ReconcileResult> {
  const folder = inbox.folder;
  await mkdir(folder, { recursive: true, mode: 0o700 });
  const lock = await lockTarget({ kind: 'file', path: join(folder, LOCKED) }, {
    command: options.command ?? 'wds-files webhook reconcile',
    waitMs: LOCK_WAIT_MS,
    signal: options.signal,
    onWait: (holder) => options.onWait?.(`another reconcile of ${folder} is under way${holder ? ` (pid ${holder.pid}, ${holder.command})` : ''}; waiting for it to end`),
  });
  try {
    const now = options.now ?? (() => new Date());
    const previous = await readMemberList(folder);
    // Taken before the request: a delivery received while the list is on its way counts as after it.
    const listedAt = now().toISOString();
    const listing = await client.members.list({ signal: options.signal });
    const current: MemberList = {
      version: 1,
      listed_at: listedAt,
      service_updated_at: listing.updated_at ?? null,
      members: Object.fromEntries(listing.member_data.map((member) => [member.code, memberHash(member)])),
    };
    const result: ReconcileResult = {
      baseline: previous === null, members: listing.member_data.length, created: [], updated: [], deleted: [],
      announced: 0, stored: [], listed_at: listedAt, previous_listed_at: previous?.listed_at ?? null,
    };
    if (previous) {
      const announced = await announcedSince(folder, new Date(previous.listed_at));
      const eventTime = listing.updated_at ?? serviceTime(new Date(listedAt), options.timeZone ?? 'Asia/Tokyo');
      const changes = compareMembers(new Map(Object.entries(previous.members)), new Map(Object.entries(current.members)), announced, eventTime);
      Object.assign(result, { created: changes.created, updated: changes.updated, deleted: changes.deleted, announced: changes.announced });
      if (changes.missed.length) result.stored = (await inbox.append(changes.missed, 'reconciled')).stored;
    }
    await lock.assertHeld();
    await writeFileAtomically(join(folder, MEMBER_LIST_FILE), [`${JSON.stringify(current)}\n`]);
    return result;
  } finally {
    await lock.release();
  }
}

/** What changed between two lists (code to hash), and the events to store for what no event announced. */
export interface MemberChanges {
  created: string[];
  updated: string[];
  deleted: string[];
  /** Changes an event had announced already. */
  announced: number;
  /** One event a change no event announced, at `eventTime`. */
  missed: InboxEventInput[];
}

/**
 * Compares the last list with the current one. `announced` holds the events of each code received
 * since the last list; `eventTime` is the listing's time of its latest change, in service time.
 */
export function compareMembers(previous: ReadonlyMap<string, string>, current: ReadonlyMap<string, string>, announced: ReadonlyMap<string, ReadonlySet<WebhookEvent>>, eventTime: string): MemberChanges {
  const changes: MemberChanges = { created: [], updated: [], deleted: [], announced: 0, missed: [] };
  for (const [code, hash] of current) {
    const before = previous.get(code);
    if (before === undefined) changes.created.push(code);
    else if (before !== hash) changes.updated.push(code);
  }
  for (const code of previous.keys()) if (!current.has(code)) changes.deleted.push(code);
  const add = (event: WebhookEvent, codes: string[], isAnnounced: (code: string) => boolean): void => {
    for (const code of codes) {
      if (isAnnounced(code)) changes.announced += 1;
      else changes.missed.push({ event, event_time: eventTime, codes: [code] });
    }
  };
  add('member_created', changes.created, (code) => announced.get(code)?.has('member_created') ?? false);
  // A change may also come as a deletion and a new registration of the same code.
  add('member_updated', changes.updated, (code) => announced.has(code));
  add('member_deleted', changes.deleted, (code) => announced.get(code)?.has('member_deleted') ?? false);
  return changes;
}

/** The events of each member code received at or after `since`, whatever their source. */
async function announcedSince(folder: string, since: Date): Promise<Map<string, Set<WebhookEvent>>> {
  const seen = new Map<string, Set<WebhookEvent>>();
  for await (const event of readInboxEvents(folder, { since })) {
    for (const code of event.codes) {
      let kinds = seen.get(code);
      if (!kinds) seen.set(code, (kinds = new Set()));
      kinds.add(event.event);
    }
  }
  return seen;
}
