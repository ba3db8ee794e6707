/**
 * An acknowledged delivery survives the receiver's death (DESIGN.md section 15): `webhook serve`
 * as a child process, 300 deliveries from 20 concurrent senders, the receiver killed (SIGKILL) or
 * stopped (SIGTERM) while they arrive; every delivery answered 2xx must be in the inbox.
 */
import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { TOKEN, deliveryBody, inboxEvents, inboxFilesText, inboxFolder, startServe, type Serve } from '../helpers/webhook-serve.js';

const headers = { 'Content-Type': 'application/json', 'Service-Token': TOKEN, 'User-Agent': 'Service-Webhook' };

/**
 * Sends `count` deliveries of one code each (`<prefix><i>`) from 20 senders, and calls `stop` once
 * `stopAfter` of them were answered 2xx. Answers the codes answered 2xx and the other statuses seen.
 */
async function deliver(serve: Serve, prefix: string, count: number, stopAfter: number, stop: () => void): Promise<{ acked: string[]; statuses: number[] }> {
  const agent = new Agent({ connections: 20 });
  const acked: string[] = [];
  const statuses: number[] = [];
  let next = 0;
  const sender = async (): Promise<void> => {
    while (next < count) {
      const code = `${prefix}${next++}`;
      try {
        const res = await request(serve.url, { method: 'POST', dispatcher: agent, headers, body: deliveryBody('member_updated', '2026-12-02 10:00:00', [code]) });
        await res.body.text();
        if (res.statusCode >= 200 && res.statusCode < 300) {
          acked.push(code);
          if (acked.length === stopAfter) stop();
        } else statuses.push(res.statusCode);
      } catch {
        // The receiver was gone: not answered, so the service would count it failed.
      }
    }
  };
  await Promise.all(Array.from({ length: 20 }, sender));
  await agent.destroy();
  return { acked, statuses };
}

describe('webhook serve killed while deliveries arrive', () => {
  it('keeps every delivery it answered 2xx, at three moments of 300 deliveries, and stores each once after a restart', async () => {
    const dir = inboxFolder();
    const everAcked: string[] = [];
    for (const [round, killAfter] of [[0, 3], [1, 150], [2, 270]] as const) {
      const serve = await startServe(dir);
      // At most 19 other deliveries are under way when the kill comes: 270 leaves some unsent.
      const { acked, statuses } = await deliver(serve, `K${round}-`, 300, killAfter, () => serve.child.kill('SIGKILL'));
      expect((await serve.ended).signal).toBe('SIGKILL');
      expect(statuses).toEqual([]);
      expect(acked.length).toBeGreaterThanOrEqual(killAfter);
      expect(acked.length, `round ${round}: the kill came before the last delivery`).toBeLessThan(300);
      everAcked.push(...acked);
      const stored = new Set((await inboxEvents(dir)).flatMap((event) => event.codes));
      expect(everAcked.filter((code) => !stored.has(code)), 'answered 2xx but not in the inbox').toEqual([]);
    }

    // Started again on the same inbox: the deliveries already stored come again, are answered 2xx and not stored twice.
    const serve = await startServe(dir);
    const agent = new Agent({ connections: 20 });
    const again = await Promise.all(everAcked.slice(0, 100).map(async (code) => {
      const res = await request(serve.url, { method: 'POST', dispatcher: agent, headers, body: deliveryBody('member_updated', '2026-12-02 10:00:00', [code]) });
      return { status: res.statusCode, body: await res.body.json() };
    }));
    await agent.destroy();
    expect(again.every((answer) => answer.status === 200 && (answer.body as { status: string }).status === 'duplicate')).toBe(true);
    const codes = (await inboxEvents(dir)).flatMap((event) => event.codes);
    expect(codes.length).toBe(new Set(codes).size);
    serve.child.kill('SIGTERM');
    await serve.ended;
    expect(inboxFilesText(dir)).not.toContain(TOKEN);
  }, 120_000);

  it('on SIGTERM answers the deliveries it had started to store, keeps each one answered 2xx, and exits 0', async () => {
    const dir = inboxFolder();
    const serve = await startServe(dir);
    const { acked, statuses } = await deliver(serve, 'T-', 300, 40, () => serve.child.kill('SIGTERM'));
    const ended = await serve.ended;
    expect(ended.code).toBe(0);
    expect(statuses).toEqual([]);
    expect(acked.length).toBeLessThan(300);
    const stored = new Set((await inboxEvents(dir)).flatMap((event) => event.codes));
    expect(acked.filter((code) => !stored.has(code))).toEqual([]);
    const said = /stopped \(SIGTERM\): (\d+) stored, 0 duplicates, 0 refused/.exec(serve.stderr());
    expect(Number(said?.[1])).toBeGreaterThanOrEqual(acked.length);
    expect(serve.stdout() + serve.stderr()).not.toContain(TOKEN);
  });
});
