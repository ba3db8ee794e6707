/**
 * Webhook deliveries in fleet mode (DESIGN.md sections 14 and 15), as users run it: `webhook serve
 * --database --companies` and one `fleet worker` as child processes, a real PostgreSQL, the
 * emulator serving two companies and delivering real webhooks over plain HTTP to the receiver,
 * each company at its own path. A member_created for alpha queues alpha's `on: [member_created]`
 * pipeline through pg-boss, and the worker runs it once for a burst of events.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finished, runCli, spawnCli, stderrMatching, type CliRun } from '../helpers/cli-process.js';
import { API, useEmulator } from '../helpers/emulator.js';
import { tempDir } from '../helpers/export.js';
import { usePostgres } from '../helpers/postgres.js';
import { newBucket, s3Server, type S3Server } from '../helpers/s3-server.js';

const TOKEN = 'whsec-fleet-7d41c09e2b8a5f36';
const COMPANIES = ['alpha', 'beta'];
const secretOf = (company: string): string => `${company}-consumer-secret-c3e1`;
const dir = tempDir('wds-fleet-hooks-');
writeFileSync(join(dir, 'emulator.yaml'), `companies:\n${COMPANIES.map((c, i) => `  - name: ${c}
    consumer_key: ${c}-key
    consumer_secret: ${secretOf(c)}
    allow_http_webhooks: true
    generate: { members: 2, seed: ${i + 7}, photo_ratio: 0, attachments_per_member: [1, 1], attachment_bytes: [2048, 3000] }
`).join('')}`);
const emu = useEmulator({ config: join(dir, 'emulator.yaml') });
const server = await s3Server();

interface Child {
  child: ReturnType<typeof spawnCli>;
  done: Promise<CliRun>;
  log: () => string;
}

describe.skipIf(server === null)('webhook serve --database --companies: deliveries queue the fleet\'s runs', { timeout: 600_000 }, () => {
  const s3 = server as S3Server;
  const db = usePostgres();
  let receiver: Child;
  let worker: Child;
  let url: string;
  const env = (): NodeJS.ProcessEnv => ({
    ...s3.env, WDS_WEBHOOK_TOKEN: TOKEN, WDS_FLEET_LEASE: '30',
    ...Object.fromEntries(COMPANIES.map((c) => [`SECRET_${c.toUpperCase()}`, secretOf(c)])),
  });

  function start(args: string[]): Child {
    const child = spawnCli(args, env());
    let text = '';
    child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
    return { child, done: finished(child), log: () => text };
  }

  beforeAll(async () => {
    const bucket = await newBucket(s3);
    writeFileSync(join(dir, 'new-members.yaml'), `name: new-members\non: [member_created]\ndebounce: 30s\nfrom: { service: attachments }\nto: { archive: "s3://${bucket}/\${COMPANY}/attachments", s3: { force_path_style: true } }\n`);
    writeFileSync(join(dir, 'companies.yaml'), `companies:\n${COMPANIES.map((c) => `  - name: ${c}\n    base_url: ${emu().url}\n    consumer_key: ${c}-key\n    consumer_secret: \${SECRET_${c.toUpperCase()}}\n    pipelines: [new-members.yaml]\n`).join('')}`);
    receiver = start(['webhook', 'serve', '--port', '0', '--database', db.url, '--companies', join(dir, 'companies.yaml')]);
    url = /receiving webhooks at (http:\/\/[^/\s]+)\/COMPANY/.exec(await stderrMatching(receiver.child, /receiving webhooks at http:\/\/\S+/, 60_000))![1]!;
    worker = start(['fleet', 'worker', '--database', db.url, '--companies', join(dir, 'companies.yaml'), '--concurrency', '1']);
    await stderrMatching(worker.child, /worker \S+: 2 companies/, 60_000);
  }, 180_000);

  afterAll(async () => {
    for (const c of [receiver, worker]) c?.child.kill('SIGKILL');
    await Promise.all([receiver?.done, worker?.done]);
  });

  async function query<T = Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<T[]> {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      return (await client.query(sql, values)).rows as T[];
    } finally {
      await client.end();
    }
  }

  async function until(what: string, test: () => Promise<boolean> | boolean, timeoutMs = 300_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!(await test())) {
      for (const c of [receiver, worker]) if (c.child.exitCode !== null) throw new Error(`a child ended while waiting for ${what}:\n${c.log().slice(-3000)}`);
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${receiver.log().slice(-2000)}\n----\n${worker.log().slice(-3000)}`);
      await sleep(250);
    }
  }

  /** An access token of one of the emulator's companies. */
  async function tokenOf(company: string): Promise<string> {
    const answer = await fetch(`${emu().url}${API}/token`, {
      method: 'POST',
      headers: { Authorization: `Basic ${Buffer.from(`${company}-key:${secretOf(company)}`).toString('base64')}`, 'Content-Type': 'application/x-www-form-urlencoded;charset=UTF-8' },
      body: 'grant_type=client_credentials',
    });
    expect(answer.status).toBe(200);
    return ((await answer.json()) as { access_token: string }).access_token;
  }

  const post = (path: string, body: unknown, token = TOKEN): Promise<Response> =>
    fetch(`${url}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'Service-Token': token }, body: JSON.stringify(body) });

  interface EventRow { company: string; event: string; codes: string[]; source: string; received_at: Date }
  const events = (): Promise<EventRow[]> => query<EventRow>('SELECT company, event, codes, source, received_at FROM wds_fleet.webhook_events ORDER BY seq');
  interface RunRow { company: string; pipeline: string; trigger: string; status: string; started_at: Date }
  const runs = (): Promise<RunRow[]> => query<RunRow>('SELECT company, pipeline, trigger, status, started_at FROM wds_fleet.runs ORDER BY started_at');

  it('a burst of member_created for alpha, delivered by the service, makes one run of alpha\'s on: pipeline by the worker', async () => {
    const registered = await runCli(['webhook', 'register', '--url', `${url}/alpha`, '--allow-http', '--events', 'member_created',
      '--base-url', emu().url, '--consumer-key', 'alpha-key', '--consumer-secret', secretOf('alpha')], env());
    expect(registered.code, registered.stderr).toBe(0);
    // Three registrations at once: three deliveries, well within the pipeline's 30 s debounce.
    const codes = ['F001', 'F002', 'F003'];
    const token = await tokenOf('alpha');
    await Promise.all(codes.map(async (code) => {
      const answer = await fetch(`${emu().url}${API}/members`, {
        method: 'POST', headers: { 'Service-Token': token, 'Content-Type': 'application/json' }, body: JSON.stringify({ member_data: [{ code, name: `Member ${code}` }] }),
      });
      expect(answer.status, await answer.clone().text()).toBe(200);
    }));
    await until('the three events in the table', async () => (await events()).length === 3);
    const stored = await events();
    expect(stored.map((e) => `${e.company} ${e.event} ${e.codes.join(',')} ${e.source}`).sort()).toEqual(codes.map((c) => `alpha member_created ${c} delivery`));
    await until('alpha\'s run to end', async () => (await runs()).some((r) => r.status !== 'running'));
    // Long enough for a second run to have been queued and started, had the burst made one.
    await sleep(5_000);
    const all = await runs();
    expect(all.map((r) => `${r.company}/${r.pipeline} ${r.trigger} ${r.status}`)).toEqual(['alpha/new-members event ok']);
    for (const event of stored) expect(event.received_at.getTime()).toBeLessThan(all[0]!.started_at.getTime());
    expect(receiver.log()).toMatch(/alpha\/new-members: member_created; queued to start in 30 s/);
    expect(receiver.log()).toMatch(/alpha\/new-members: member_created; joins its run already queued/);

    const status = await runCli(['fleet', 'status', '--database', db.url, '--json'], env());
    expect(status.code, status.stderr).toBe(0);
    const rows = JSON.parse(status.stdout) as { company: string; pipeline: string; last_run?: { status: string } }[];
    expect(rows.find((r) => r.company === 'alpha')?.last_run?.status).toBe('ok');
    expect(rows.find((r) => r.company === 'beta')?.last_run).toBeUndefined();

    const listed = await runCli(['webhook', 'events', '--database', db.url, '--company', 'alpha', '--json'], env());
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout.trim().split('\n').map((line) => JSON.parse(line) as { company: string; event: string; source: string });
    expect(lines.map((l) => `${l.company} ${l.event} ${l.source}`)).toEqual(codes.map(() => 'alpha member_created delivery'));
  });

  it('the same delivery twice is stored once; a path that names no company is 404; a wrong token 401', async () => {
    const delivery = { event: 'member_updated', event_time: '2026-12-02 10:00:00', member_data: [{ code: 'F001' }] };
    const first = await post('/beta', delivery);
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ status: 'stored' });
    const again = await post('/beta', delivery);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ status: 'duplicate' });
    expect((await events()).filter((e) => e.company === 'beta').map((e) => `${e.event} ${e.codes.join(',')}`)).toEqual(['member_updated F001']);
    expect((await post('/gamma', delivery)).status).toBe(404);
    expect((await post('/beta', { ...delivery, event_time: '2026-12-02 10:00:01' }, 'wrong-token')).status).toBe(401);
    expect((await events()).filter((e) => e.company === 'beta')).toHaveLength(1);
    // member_updated is no event of beta's pipeline: nothing was queued for it.
    expect((await runs()).filter((r) => r.company === 'beta')).toEqual([]);
  });

  it('answers 503 and stores nothing while PostgreSQL is stopped; stores again once it is back', async () => {
    const before = (await events()).length;
    await db.stop();
    try {
      const answer = await post('/beta', { event: 'member_deleted', event_time: '2026-12-02 10:05:00', member_data: [{ code: 'F002' }] });
      expect(answer.status).toBe(503);
    } finally {
      await db.start();
    }
    expect((await events()).length).toBe(before);
    await until('a delivery stored again', async () => (await post('/beta', { event: 'member_deleted', event_time: '2026-12-02 10:06:00', member_data: [{ code: 'F002' }] })).status === 200, 120_000);
    expect((await events()).length).toBe(before + 1);
    expect(receiver.log()).toMatch(/refused \(503 store_failed\)/);
  });

  it('webhook reconcile --database --companies: a member no delivery announced is stored reconciled and queues its company\'s run', async () => {
    const reconcile = (...more: string[]): Promise<CliRun> => runCli(['webhook', 'reconcile', '--database', db.url, '--companies', join(dir, 'companies.yaml'), ...more], env());
    const first = await reconcile();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/alpha: first list recorded \(5 members\); nothing stored/);
    expect(first.stdout).toMatch(/beta: first list recorded \(2 members\); nothing stored/);
    // alpha's webhook (registered above) delivers its new member; beta has none, so its event is lost.
    for (const [company, code] of [['alpha', 'R001'], ['beta', 'R002']] as const) {
      const answer = await fetch(`${emu().url}${API}/members`, {
        method: 'POST', headers: { 'Service-Token': await tokenOf(company), 'Content-Type': 'application/json' }, body: JSON.stringify({ member_data: [{ code, name: `Member ${code}` }] }),
      });
      expect(answer.status, await answer.clone().text()).toBe(200);
    }
    await until('alpha\'s delivery of R001', async () => (await events()).some((e) => e.company === 'alpha' && e.codes.includes('R001')));
    const second = await reconcile();
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/alpha: 6 members; since .*: 1 created, 0 updated, 0 deleted; 1 announced, 0 stored/);
    expect(second.stdout).toMatch(/beta: 3 members; since .*: 1 created, 0 updated, 0 deleted; 0 announced, 1 stored/);
    const mine = (await events()).filter((e) => e.codes.includes('R001') || e.codes.includes('R002'));
    expect(mine.map((e) => `${e.company} ${e.event} ${e.codes.join(',')} ${e.source}`)).toEqual(['alpha member_created R001 delivery', 'beta member_created R002 reconciled']);
    // The reconciled event queued beta's on: [member_created] pipeline, which the worker runs.
    await until('beta\'s run to end', async () => (await runs()).some((r) => r.company === 'beta' && r.status !== 'running'));
    expect((await runs()).filter((r) => r.company === 'beta').map((r) => `${r.pipeline} ${r.trigger} ${r.status}`)).toEqual(['new-members event ok']);
    // Nothing changed since: nothing stored; one company asked for alone.
    const third = await reconcile('--company', 'beta', '--json');
    expect(third.code, third.stderr).toBe(0);
    expect(JSON.parse(third.stdout)).toMatchObject({ companies: 1, failed: 0, stored: 0 });
    const unknown = await reconcile('--company', 'gamma');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--company gamma is not in .*companies\.yaml/);
    for (const run of [first, second, third]) for (const c of COMPANIES) expect(run.stdout + run.stderr).not.toContain(secretOf(c));
  });

  it('the webhook token is in no table and no log', async () => {
    const tables = await query<{ schema: string; name: string }>(
      `SELECT table_schema AS schema, table_name AS name FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'`,
    );
    let dump = '';
    for (const table of tables) dump += (await query<{ row: string }>(`SELECT t::text AS row FROM "${table.schema}"."${table.name}" t`)).map((r) => r.row).join('\n');
    expect(dump).toContain('member_created');
    for (const text of [dump, receiver.log(), worker.log()]) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain('test-password');
      for (const c of COMPANIES) expect(text).not.toContain(secretOf(c));
    }
    receiver.child.kill('SIGTERM');
    const ended = await receiver.done;
    expect(ended.code, ended.stderr.slice(-2000)).toBe(0);
    expect(ended.stdout).not.toContain(TOKEN);
  });
});
