/**
 * What goes wrong between the legacy client and the service: an answer lost after the service
 * acted (a read is sent again, an update never is and raises the same error as WdsClient's lost
 * update answer), tokens that expire (renewed before expiry, and once on a 401), wrong
 * credentials, and secrets kept out of errors and log lines. The emulator's clock runs 3,600 times
 * faster, so a token's hour is a second. Answers are lost by a real TCP relay in front of the
 * emulator that closes the client's connection when the answer starts, after the service acted.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as delay } from 'node:timers/promises';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';
import {
  LegacyClient, AuthenticationError, NotFoundError, TimeoutError, UpdateOutcomeUnknownError, isLegacyTimeout, type LegacyClientOptions, type LegacyWaitEvent,
} from '../../src/index.js';
import { legacyClientFor } from '../helpers/legacy-client.js';

const emu = useEmulator({ seed: 'samples/company', maintenance: false, clockSpeed: 3600, limits: { legacyRequestsPerHour: 100_000, legacyTokensPerHour: 1000 } });

/** A relay to the emulator that drops the answer of the next `cuts` requests whose line matches `pattern`. */
class AnswerCutter {
  private server!: Server;
  pattern: RegExp = /$^/;
  cuts = 0;
  /** Answers of matching requests are held back instead of cut, as a gateway that never answers. */
  hold = false;
  port = 0;

  async start(target: () => number): Promise<void> {
    this.server = createServer((client: Socket) => {
      const upstream = connect(target(), '127.0.0.1');
      let cut: boolean | undefined;
      client.on('data', (chunk: Buffer) => {
        if (cut === undefined) {
          const line = chunk.toString('latin1').split('\r\n', 1)[0]!;
          cut = this.cuts > 0 && this.pattern.test(line);
          if (cut) this.cuts -= 1;
        }
        upstream.write(chunk);
      });
      upstream.on('data', (chunk: Buffer) => {
        // The service has answered, so it has acted: the client never hears of it.
        if (cut && this.hold) return;
        if (cut) {
          client.destroy();
          upstream.destroy();
          return;
        }
        client.write(chunk);
      });
      client.on('end', () => upstream.end());
      upstream.on('end', () => {
        if (!(cut && this.hold)) client.end();
      });
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const cutter = new AnswerCutter();
beforeAll(() => cutter.start(() => Number(new URL(emu().url).port)));
afterAll(() => cutter.close());

function legacy(options: Partial<LegacyClientOptions> = {}): LegacyClient {
  return legacyClientFor(emu().url, options);
}

async function requests(route: string): Promise<number> {
  return ((await emu().control('GET', '/stats')).requests[route] ?? 0) as number;
}

describe('a lost answer', () => {
  it('of a read: the read is sent again and answers', async () => {
    const waits: LegacyWaitEvent[] = [];
    const client = legacy({ baseUrl: `http://127.0.0.1:${cutter.port}`, onWait: (e) => waits.push(e) });
    await client.users.list();
    const before = await requests('POST /v1/department');
    cutter.pattern = /^POST \/api\/v1\.2\/department /;
    cutter.cuts = 1;
    const { departments } = await client.departments.list();
    expect(departments.length).toBeGreaterThan(0);
    expect(await requests('POST /v1/department')).toBe(before + 2);
    expect(waits.some((w) => w.reason === 'retry')).toBe(true);
    await client.close();
  });

  it('of an update: never sent again, raises UpdateOutcomeUnknownError as WdsClient does, and the update took effect once', async () => {
    const client = legacy({ baseUrl: `http://127.0.0.1:${cutter.port}` });
    await client.users.list();
    const before = await requests('POST /v1/sheet/:sheet_id/data/update');
    cutter.pattern = /^POST \/api\/v1\.2\/sheet\/0\/data\/update /;
    cutter.cuts = 1;
    const sent = client.sheets.update(0, [{ member_code: 'A0004', member_name: '届かず 次郎' }]);
    const error = await sent.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpdateOutcomeUnknownError);
    expect((error as UpdateOutcomeUnknownError).code).toBe('UPDATE_OUTCOME_UNKNOWN');
    expect((error as Error).message).toMatch(/\/api\/v1\.2\/sheet\/0\/data\/update/);
    expect(await requests('POST /v1/sheet/:sheet_id/data/update')).toBe(before + 1);
    // The service did act: the change lands once its task runs.
    const direct = legacy();
    for (let i = 0; i < 100; i += 1) {
      const row = (await direct.sheets.get(0)).data.find((r) => r.member_code === 'A0004');
      if (row?.member_name === '届かず 次郎') break;
      await delay(20);
    }
    expect((await direct.sheets.get(0)).data.find((r) => r.member_code === 'A0004')?.member_name).toBe('届かず 次郎');
    await Promise.all([client.close(), direct.close()]);
  });
});

describe('a sheet read that times out', () => {
  it('raises an error isLegacyTimeout recognises, so the sheet can be read asynchronously instead', async () => {
    const client = legacy({ baseUrl: `http://127.0.0.1:${cutter.port}`, timeoutMs: 300, retry: { maxAttempts: 2, baseDelayMs: 10 } });
    await client.users.list();
    cutter.pattern = /^POST \/api\/v1\.2\/sheet\/0 /;
    cutter.cuts = 2;
    cutter.hold = true;
    try {
      const error = await client.sheets.get(0).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TimeoutError);
      expect(isLegacyTimeout(error)).toBe(true);
      expect(isLegacyTimeout(new NotFoundError({ status: 404 }))).toBe(false);
      const { records } = await client.sheets.readAsync(0);
      expect(records.length).toBe(30);
    } finally {
      cutter.hold = false;
      cutter.cuts = 0;
    }
    await client.close();
  });
});

describe('tokens', () => {
  it('renews a token the service has let expire, once, on its 401', async () => {
    const lines: string[] = [];
    const logger = { debug: (m: string) => lines.push(m), info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m) };
    const client = legacy({ logger });
    const issued = (await emu().control('GET', '/stats')).tokens_issued as number;
    await client.sheets.get(0);
    // An hour of service time: the token has expired, though the client's clock says otherwise.
    await delay(1300);
    const { data } = await client.sheets.get(0);
    expect(data.length).toBeGreaterThan(0);
    expect((await emu().control('GET', '/stats')).tokens_issued).toBe(issued + 2);
    expect(lines.filter((l) => /^POST \/api\/v1\.2\/sheet\/0 401 /.test(l))).toHaveLength(1);
    expect(lines.filter((l) => /^POST \/api\/v1\.2\/get_token 200 /.test(l))).toHaveLength(2);
    await client.close();
  });

  it('renews a token before it expires when told it lives that long, with no 401', async () => {
    const lines: string[] = [];
    const logger = { debug: (m: string) => lines.push(m), info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m) };
    // Renewed 0.5 s into its hour (as it would be a minute before its end at a normal clock).
    const client = legacy({ logger, tokenRenewBeforeMs: 3_600_000 - 500 });
    await client.departments.list();
    await client.departments.list();
    await delay(700);
    await client.departments.list();
    expect(lines.filter((l) => /^POST \/api\/v1\.2\/get_token 200 /.test(l))).toHaveLength(2);
    expect(lines.filter((l) => / 401 /.test(l))).toEqual([]);
    await client.close();
  });
});

describe('secrets', () => {
  it('wrong credentials raise AuthenticationError that shows neither the secret nor itself in logs', async () => {
    const secret = 'wrong-Secret-7f3a9c';
    const lines: string[] = [];
    const logger = { debug: (m: string) => lines.push(m), info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m) };
    const client = legacy({ consumerSecret: secret, logger });
    const error = await client.users.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect((error as AuthenticationError).status).toBe(401);
    const shown = `${(error as Error).message} ${JSON.stringify(error)} ${String((error as Error).stack)} ${lines.join('\n')}`;
    expect(shown).toMatch(/consumer key or consumer secret is not valid/);
    expect(shown).not.toContain(secret);
    await client.close();
  });

  it('keeps the token out of errors and log lines, and a password sent out of task errors', async () => {
    const lines: string[] = [];
    const logger = { debug: (m: string) => lines.push(m), info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m) };
    const client = legacy({ logger });
    await client.users.list();
    const token = await client.transport.tokens.get();
    const notFound = await client.sheets.get(424_242).catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(NotFoundError);
    const password = 'Pw-never-shown-42';
    const added = await client.users.add([{ email: 'not-an-email', password, role: 'no such role' }]);
    const errors = added.dryRun ? added.errors : (await client.tasks.wait(added.progressId)).errors;
    expect(errors.length).toBeGreaterThan(0);
    const shown = `${(notFound as Error).message} ${JSON.stringify(notFound)} ${errors.join(' ')} ${lines.join('\n')}`;
    expect(lines.length).toBeGreaterThan(3);
    expect(shown).not.toContain(token);
    expect(shown).not.toContain(password);
    expect(shown).not.toContain(SECRET);
    await client.close();
  });
});

describe('the daily maintenance window', () => {
  const daily = useEmulator({ seed: 'samples/company', limits: { legacyRequestsPerHour: 100_000 } });

  it('is waited out as the 503 says, for a read and for an update (sent again: a 503 did nothing)', async () => {
    const waits: LegacyWaitEvent[] = [];
    const client = new LegacyClient({
      baseUrl: daily().url, consumerKey: KEY, consumerSecret: SECRET, stateFile: false, limits: false,
      poll: { intervalMs: 20, maxIntervalMs: 200 }, onWait: (e) => waits.push(e),
    });
    await client.users.list();
    // Three seconds before the end of the 01:00-01:30 backup.
    await daily().control('POST', '/clock', { now: '2026-04-02 01:29:57' });
    const { data } = await client.sheets.get(0);
    expect(data.length).toBe(30);
    expect(waits.filter((w) => w.reason === 'maintenance').length).toBeGreaterThanOrEqual(1);
    await daily().control('POST', '/clock', { now: '2026-04-02 01:29:58' });
    const queued = await client.sheets.update(0, [{ member_code: 'A0005', member_name: '保守 明け' }]);
    if (queued.dryRun) throw new Error('not a dry run');
    expect((await client.tasks.wait(queued.progressId)).status).toBe('OK');
    expect((await daily().control('GET', '/stats')).requests['POST /v1/sheet/:sheet_id/data/update']).toBe(1);
    expect(waits.filter((w) => w.reason === 'maintenance').length).toBeGreaterThanOrEqual(2);
    await client.close();
  }, 30_000);
});
