import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { INBOX_FILE, WebhookInbox, readInboxEvents, type InboxEvent, type InboxEventInput } from '../../src/webhooks/inbox.js';
import { CLI_BUILD } from '../helpers/cli-process.js';
import { isRoot, useTmpfs } from '../helpers/tmpfs.js';

const disk = useTmpfs('inbox.test', '64k');
const folders: string[] = [];
const opened: WebhookInbox[] = [];

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'wds-inbox-'));
  folders.push(dir);
  return dir;
}

async function open(dir: string): Promise<WebhookInbox> {
  const inbox = await WebhookInbox.open(dir);
  opened.push(inbox);
  return inbox;
}

async function all(dir: string, since?: Date): Promise<InboxEvent[]> {
  const events: InboxEvent[] = [];
  for await (const event of readInboxEvents(dir, { since })) events.push(event);
  return events;
}

const created = (code: string, time = '2026-12-02 10:00:00'): InboxEventInput => ({ event: 'member_created', event_time: time, codes: [code] });

afterEach(async () => {
  for (const inbox of opened.splice(0)) await inbox.close();
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('webhook inbox', () => {
  it('stores each event as a JSON line with its source and time of receipt, fsynced before the append resolves', async () => {
    const dir = folder();
    const inbox = await open(dir);
    const before = Date.now();
    const result = await inbox.append([{ event: 'member_updated', event_time: '2026-12-02 10:00:00', codes: ['A1', 'B2'] }], 'delivery');
    await inbox.append([created('C3')], 'reconciled');
    expect(result.stored).toHaveLength(1);
    const events = await all(dir);
    expect(events.map(({ event, event_time, codes, source }) => ({ event, event_time, codes, source }))).toEqual([
      { event: 'member_updated', event_time: '2026-12-02 10:00:00', codes: ['A1', 'B2'], source: 'delivery' },
      { event: 'member_created', event_time: '2026-12-02 10:00:00', codes: ['C3'], source: 'reconciled' },
    ]);
    expect(Date.parse(events[0]!.received_at)).toBeGreaterThanOrEqual(before - 1);
    expect(readFileSync(join(dir, INBOX_FILE), 'utf8').split('\n').filter(Boolean)).toHaveLength(2);
  });

  it('stores the same event twice once, within one process, after a restart and whatever the order of its codes', async () => {
    const dir = folder();
    const first = await open(dir);
    const event = { event: 'member_deleted' as const, event_time: '2026-12-02 11:00:00', codes: ['X', 'Y'] };
    expect((await first.append([event], 'delivery')).stored).toHaveLength(1);
    const again = await first.append([{ ...event, codes: ['Y', 'X'] }], 'delivery');
    expect(again).toEqual({ stored: [], duplicates: 1 });
    await first.close();
    opened.splice(opened.indexOf(first), 1);
    const second = await open(dir);
    expect(second.size).toBe(1);
    expect((await second.append([event, created('Z')], 'delivery')).duplicates).toBe(1);
    // Another second, another event: not a duplicate.
    expect((await second.append([{ ...event, event_time: '2026-12-02 11:00:01' }], 'delivery')).stored).toHaveLength(1);
    expect(await all(dir)).toHaveLength(3);
  });

  it('writes concurrent appends together, in fewer writes than appends, and loses none', async () => {
    const dir = folder();
    const inbox = await open(dir);
    const results = await Promise.all(Array.from({ length: 300 }, (_, i) => inbox.append([created(`M${i}`)], 'delivery')));
    expect(results.every((result) => result.stored.length === 1)).toBe(true);
    expect(inbox.commits).toBeLessThan(300);
    expect(new Set((await all(dir)).map((event) => event.codes[0]))).toEqual(new Set(Array.from({ length: 300 }, (_, i) => `M${i}`)));
  });

  it('skips a line cut short by a killed writer, and starts the next append on a new line', async () => {
    const dir = folder();
    const inbox = await open(dir);
    await inbox.append([created('A')], 'delivery');
    await inbox.close();
    opened.splice(0);
    appendFileSync(join(dir, INBOX_FILE), '{"id":"0123","event":"member_cre');
    expect((await all(dir)).map((event) => event.codes)).toEqual([['A']]);
    const reopened = await open(dir);
    await reopened.append([created('B')], 'delivery');
    expect((await all(dir)).map((event) => event.codes)).toEqual([['A'], ['B']]);
    expect(readFileSync(join(dir, INBOX_FILE), 'utf8').endsWith('\n')).toBe(true);
  });

  it('takes over a lock left by a process that was killed holding it', async () => {
    const dir = folder();
    const inbox = await open(dir);
    // A pid far above any this machine gives out: no such process.
    writeFileSync(join(dir, '.events.lock'), `4194000 ${(await import('node:os')).hostname()} deadbeef 000000\n`);
    await inbox.append([created('A')], 'delivery');
    expect(await all(dir)).toHaveLength(1);
    // The file a lock is made from, left by a process killed before it linked it: removed at the next open.
    writeFileSync(join(dir, '.events.lock.4194000-0a1b2c'), 'x');
    await open(dir);
    expect(readdirSync(dir).sort()).toEqual([INBOX_FILE]);
  });

  it('lists events received since a time', async () => {
    const dir = folder();
    const inbox = await open(dir);
    await inbox.append([created('A')], 'delivery');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const cut = new Date();
    await inbox.append([created('B')], 'delivery');
    expect((await all(dir, cut)).map((event) => event.codes)).toEqual([['B']]);
    expect(await all(join(dir, 'none'))).toEqual([]);
  });

  it('keeps whole lines and one copy of each event while another process appends to the same inbox', async () => {
    const dir = folder();
    const inbox = await open(dir);
    // The other process appends 400 events (the first 200 also appended here) in 40 appends of 10.
    const script = `
      const { WebhookInbox } = await import(${JSON.stringify(join(CLI_BUILD, 'webhooks', 'inbox.js'))});
      const inbox = await WebhookInbox.open(${JSON.stringify(dir)});
      const chunks = Array.from({ length: 40 }, (_, c) => Array.from({ length: 10 }, (_, i) => ({ event: 'member_updated', event_time: '2026-12-02 12:00:00', codes: ['S' + (c * 10 + i)] })));
      await Promise.all(chunks.map((chunk) => inbox.append(chunk, 'reconciled')));
      await inbox.close();`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' });
    const ended = new Promise<number | null>((resolve) => child.on('close', resolve));
    const mine = Array.from({ length: 200 }, (_, i) => ({ event: 'member_updated' as const, event_time: '2026-12-02 12:00:00', codes: [`S${i}`] }));
    for (let i = 0; i < mine.length; i += 5) await inbox.append(mine.slice(i, i + 5), 'delivery');
    expect(await ended).toBe(0);
    const lines = readFileSync(join(dir, INBOX_FILE), 'utf8').split('\n');
    expect(lines.pop()).toBe('');
    for (const line of lines) expect(() => JSON.parse(line) as unknown).not.toThrow();
    const codes = (await all(dir)).map((event) => event.codes[0]);
    expect(codes).toHaveLength(400);
    expect(new Set(codes).size).toBe(400);
  });

  it.skipIf(!isRoot)('refuses an append the disk cannot hold, leaving no part of it, and stores again once there is room', async () => {
    const dir = join(disk(), 'inbox');
    const inbox = await open(dir);
    await inbox.append([created('FIRST')], 'delivery');
    const filler = join(disk(), 'filler');
    writeFileSync(filler, Buffer.alloc(40_000));
    const big = Array.from({ length: 2_000 }, (_, i) => created(`BIG${i}`, '2026-12-02 13:00:00'));
    await expect(inbox.append(big, 'delivery')).rejects.toMatchObject({ code: 'ENOSPC' });
    expect((await all(dir)).map((event) => event.codes)).toEqual([['FIRST']]);
    rmSync(filler);
    await inbox.append([created('AFTER')], 'delivery');
    expect((await all(dir)).map((event) => event.codes)).toEqual([['FIRST'], ['AFTER']]);
    expect(inbox.has(big[0]!)).toBe(false);
  });
});
