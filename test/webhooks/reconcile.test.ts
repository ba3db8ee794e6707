/**
 * `wds-files webhook reconcile` through the real CLI against the emulator, whose deliveries go to
 * a receiver that is down: the first run records the baseline and stores nothing; after two
 * members are created and one deleted, the next run stores exactly those three events, marked
 * reconciled; a change a delivery already announced is not stored again, and an update shows as
 * a changed member.
 */
import { mkdtempSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { connectionArgs, runCli } from '../helpers/cli-process.js';
import { readInboxEvents, WebhookInbox, type InboxEvent } from '../../src/webhooks/inbox.js';
import { MEMBER_LIST_FILE } from '../../src/webhooks/reconcile.js';
import { inboxFolder, startServe, TOKEN } from '../helpers/webhook-serve.js';

const emu = useEmulator({ allowHttpWebhooks: true });

/** A port nothing listens on: the receiver is down. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const reconcile = (inbox: string, extra: string[] = []) => runCli(['webhook', 'reconcile', '--inbox', inbox, ...extra, ...connectionArgs(emu())]);

async function eventsOf(inbox: string): Promise<InboxEvent[]> {
  const events: InboxEvent[] = [];
  for await (const event of readInboxEvents(inbox)) events.push(event);
  return events;
}

async function changeMembers(method: 'POST' | 'PATCH', path: string, body: unknown): Promise<void> {
  const answer = await emu().api(method, path, body);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect((await emu().waitTask(answer.body.task_id)).status).toBe('OK');
}

/** Failed deliveries of the emulator's log, as "event:codes". */
async function failedDeliveries(): Promise<string[]> {
  await emu().emulator.webhooks.settle();
  const log = (await emu().control('GET', '/webhooks')).deliveries as { event: string; codes: number; ok: boolean }[];
  return log.filter((d) => !d.ok).map((d) => `${d.event}:${d.codes}`);
}

describe('webhook reconcile', { timeout: 180_000 }, () => {
  beforeAll(async () => {
    const added = await emu().api('POST', '/webhook', { url: `http://127.0.0.1:${await closedPort()}/hook`, events: ['member_created', 'member_updated', 'member_deleted'], secret_token: 'down-receiver-token' });
    expect(added.status).toBe(200);
  });

  it('stores exactly the two creations and the deletion the receiver never got, marked reconciled, after a first run that stores nothing', async () => {
    await changeMembers('POST', '/members', { member_data: [{ code: 'R0000', name: 'Leaving Soon' }] });
    const inbox = mkdtempSync(join(tmpdir(), 'wds-inbox-'));
    const first = await reconcile(inbox, ['--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ status: 'ok', baseline: true, stored: 0 });
    expect(await eventsOf(inbox)).toEqual([]);
    expect(statSync(join(inbox, MEMBER_LIST_FILE)).isFile()).toBe(true);

    const victim = { code: 'R0000' };
    await changeMembers('POST', '/members', { member_data: [{ code: 'R0001', name: 'Reconciled One' }, { code: 'R0002', name: 'Reconciled Two' }] });
    await changeMembers('POST', '/members/delete', { codes: [victim.code] });
    // The service tried, and the receiver was down: these are the events that would be lost.
    expect(await failedDeliveries()).toEqual(expect.arrayContaining(['member_created:2', 'member_deleted:1']));

    const second = await reconcile(inbox);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain('2 created, 0 updated, 1 deleted');
    const events = await eventsOf(inbox);
    expect(events.map((e) => `${e.event} ${e.codes.join(',')} ${e.source}`).sort()).toEqual([
      'member_created R0001 reconciled', 'member_created R0002 reconciled', `member_deleted ${victim.code} reconciled`,
    ].sort());
    for (const event of events) expect(event.event_time).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);

    // Nothing changed since: nothing more is stored.
    const third = await reconcile(inbox, ['--json']);
    expect(JSON.parse(third.stdout)).toMatchObject({ baseline: false, created: 0, updated: 0, deleted: 0, stored: 0 });
    expect(await eventsOf(inbox)).toHaveLength(3);
  });

  it('leaves out a change a delivery announced, and finds an update as a changed member', async () => {
    const inbox = mkdtempSync(join(tmpdir(), 'wds-inbox-'));
    expect((await reconcile(inbox)).code).toBe(0);
    await changeMembers('POST', '/members', { member_data: [{ code: 'R0101', name: 'Delivered' }, { code: 'R0102', name: 'Missed' }] });
    await changeMembers('PATCH', '/members', { member_data: [{ code: 'R0001', name: 'Renamed' }] });
    // As the receiver would have stored a delivery of R0101's creation.
    const open = await WebhookInbox.open(inbox);
    await open.append([{ event: 'member_created', event_time: '2026-04-01 10:00:00', codes: ['R0101'] }], 'delivery');
    await open.close();

    const run = await reconcile(inbox, ['--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ created: 2, updated: 1, deleted: 0, announced: 1, stored: 2 });
    const stored = (await eventsOf(inbox)).filter((e) => e.source === 'reconciled');
    expect(stored.map((e) => `${e.event} ${e.codes.join(',')}`).sort()).toEqual(['member_created R0102', 'member_updated R0001']);
  });

  it('runs while webhook serve holds the same inbox: the delivered creation is counted announced, the deletion no setting delivers is stored', async () => {
    const inbox = inboxFolder();
    // A new minute of service time: the tests before used up its five update requests.
    await emu().control('POST', '/clock', { advance_seconds: 61 });
    await changeMembers('POST', '/members', { member_data: [{ code: 'R0200', name: 'Soon Gone' }] });
    const serve = await startServe(inbox, ['--reconcile-every', '0']);
    const hook = await emu().api('POST', '/webhook', { url: `${serve.url}/`, events: ['member_created'], secret_token: TOKEN });
    expect(hook.status).toBe(200);
    expect((await reconcile(inbox)).code).toBe(0);
    await changeMembers('POST', '/members', { member_data: [{ code: 'R0201', name: 'Delivered While Serving' }] });
    await changeMembers('POST', '/members/delete', { codes: ['R0200'] });
    await emu().emulator.webhooks.settle();
    expect((await eventsOf(inbox)).map((e) => `${e.event} ${e.codes.join(',')} ${e.source}`)).toEqual(['member_created R0201 delivery']);

    const run = await reconcile(inbox, ['--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ created: 1, deleted: 1, announced: 1, stored: 1 });
    expect((await eventsOf(inbox)).map((e) => `${e.event} ${e.codes.join(',')} ${e.source}`)).toEqual(['member_created R0201 delivery', 'member_deleted R0200 reconciled']);
    serve.child.kill('SIGTERM');
    expect((await serve.ended).code).toBe(0);
    await emu().api('DELETE', `/webhook/${hook.body.id}`);
  });
});
