/**
 * The fleet's own schedule (DESIGN.md sections 9 and 14), with no `fleet run`: real `fleet worker`
 * child processes on a real PostgreSQL, the emulator in this process, archives in the real S3
 * server. A worker's first start catches up nothing it never saw scheduled; a time missed while
 * no worker was up, after one had seen the pipeline scheduled, is caught up once by the workers
 * that start next; and the cron, read in the service's time zone, starts each due run once
 * across two workers.
 *
 * The two minutes with no worker up are made by moving the schedule's record back, not by waiting.
 * The pattern is every minute of the service's current hour and the next: due within a minute
 * wherever the test starts, and never due if the workers read it in another zone.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SERVICE_TIME_ZONE } from '../../src/schedule/service-time.js';
import { useEmulator } from '../helpers/emulator.js';
import { tempDir } from '../helpers/export.js';
import { expectNoOverlap, query, runHistory, startFleetWorker, until, type FleetWorkerProcess } from '../helpers/fleet.js';
import { usePostgres } from '../helpers/postgres.js';
import { newBucket, s3Server, type S3Server } from '../helpers/s3-server.js';

const dir = tempDir('wds-fleet-cron-');
const COMPANIES = ['alpha', 'beta'];
writeFileSync(join(dir, 'emulator.yaml'), `companies:\n${COMPANIES.map((c, i) => `  - name: ${c}
    consumer_key: ${c}-key
    consumer_secret: ${c}-secret-4d1b
    generate: { members: 3, seed: ${i + 1}, photo_ratio: 0, attachments_per_member: [1, 1], attachment_bytes: [2048, 3000] }
`).join('')}`);
const emu = useEmulator({ config: join(dir, 'emulator.yaml') });
const server = await s3Server();

/** The hour of `at` in the service's time zone. */
const serviceHour = (at: Date): number => Number(new Intl.DateTimeFormat('en-GB', { timeZone: DEFAULT_SERVICE_TIME_ZONE, hour: '2-digit', hourCycle: 'h23' }).format(at));
const HOUR = serviceHour(new Date());
const CRON = `* ${HOUR},${(HOUR + 1) % 24} * * *`;

interface JobRow { id: string; trigger: string; due_at: string | null; created_on: Date; state: string }

describe.skipIf(server === null)('the fleet\'s cron and its catch-up at a worker\'s start', { timeout: 600_000 }, () => {
  const s3 = server as S3Server;
  const db = usePostgres();
  const workers: FleetWorkerProcess[] = [];
  let handledUntil = 0;

  beforeAll(async () => {
    const bucket = await newBucket(s3);
    // alpha's archive is scheduled; beta's is not, and nothing may start it.
    writeFileSync(join(dir, 'scheduled.yaml'), `name: archive\nschedule: { cron: "${CRON}" }\nfrom: { service: attachments }\nto: { archive: "s3://${bucket}/\${COMPANY}/attachments", s3: { force_path_style: true } }\n`);
    writeFileSync(join(dir, 'unscheduled.yaml'), `name: archive\nfrom: { service: attachments }\nto: { archive: "s3://${bucket}/\${COMPANY}/attachments", s3: { force_path_style: true } }\n`);
    writeFileSync(join(dir, 'companies.yaml'), `companies:\n${COMPANIES.map((c, i) => `  - name: ${c}\n    base_url: ${emu().url}\n    consumer_key: ${c}-key\n    consumer_secret: \${SECRET_${c.toUpperCase()}}\n    pipelines: [${i === 0 ? 'scheduled' : 'unscheduled'}.yaml]\n`).join('')}`);
  }, 120_000);

  afterAll(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await Promise.all(workers.map((worker) => worker.done));
  });

  const startWorker = (): FleetWorkerProcess => {
    const worker = startFleetWorker(['--database', db.url, '--companies', join(dir, 'companies.yaml'), '--concurrency', '2'], {
      ...s3.env, SECRET_ALPHA: 'alpha-secret-4d1b', SECRET_BETA: 'beta-secret-4d1b', WDS_FLEET_LEASE: '30',
    });
    workers.push(worker);
    return worker;
  };
  const jobs = (company: string): Promise<JobRow[]> => query<JobRow>(db.url,
    `SELECT id, data->>'trigger' AS trigger, data->>'due_at' AS due_at, created_on, state FROM pgboss.job WHERE name = 'wds-fleet-runs' AND data->>'company' = $1 ORDER BY created_on`, [company]);

  it('a worker\'s first start catches up nothing: it never saw the pipeline scheduled', async () => {
    const first = startWorker();
    await first.up;
    expect(first.log()).toMatch(new RegExp(`cron "${CRON.replace(/\*/g, '\\*')}" \\(${DEFAULT_SERVICE_TIME_ZONE}\\): alpha/archive; next `));
    expect(first.log()).not.toMatch(/catching up|due since/);
    // The minute before its start was a time of the pattern, and nothing was queued for it.
    expect((await jobs('alpha')).filter((j) => j.trigger === 'catch-up')).toEqual([]);
    const [row] = await query<{ cron: string; time_zone: string }>(db.url, `SELECT cron, time_zone FROM wds_fleet.pipelines WHERE company = 'alpha'`);
    expect(row).toEqual({ cron: CRON, time_zone: DEFAULT_SERVICE_TIME_ZONE });
    first.child.kill('SIGTERM');
    const ended = await first.done;
    expect(ended.code, ended.stderr.slice(-2000)).toBe(0);
    workers.splice(workers.indexOf(first), 1);
    // Two minutes with no worker up, without waiting for them: the schedule's record of what it
    // handled is moved back, as if the last worker had stopped two minutes ago.
    const [moved] = await query<{ handled_until: Date }>(db.url,
      `UPDATE wds_fleet.pipelines SET handled_until = handled_until - interval '2 minutes' WHERE company = 'alpha' RETURNING handled_until`);
    handledUntil = moved!.handled_until.getTime();
  });

  it('a time missed while no worker was up is caught up once by the two workers that start next', async () => {
    // Not in a minute's last seconds: a pair started across a boundary would see the new minute
    // already taken by the schedule of the first one up, and both would say they caught up.
    if (Date.now() % 60_000 > 40_000) await sleep(61_000 - (Date.now() % 60_000));
    const pair = [startWorker(), startWorker()];
    await Promise.all(pair.map((w) => w.up));
    const catching = pair.filter((w) => /alpha\/archive: \d+ runs? (was|were) due since .* while no worker took them \(last at .*\); catching up once now/.test(w.log()));
    expect(catching, pair.map((w) => w.log()).join('\n----\n')).toHaveLength(1);
    const caught = (await jobs('alpha')).filter((j) => j.trigger === 'catch-up');
    expect(caught).toHaveLength(1);
    // The last time of the pattern in the two minutes no worker saw.
    const due = new Date(caught[0]!.due_at!).getTime();
    expect(due).toBeGreaterThan(handledUntil);
    expect(due).toBeLessThanOrEqual(caught[0]!.created_on.getTime());
    expect(caught[0]!.created_on.getTime() - due).toBeLessThan(60_000);
    expect(new Date(caught[0]!.due_at!).getTime() % 60_000).toBe(0);
    await until('the catch-up run to end ok', async () => (await runHistory(db.url)).some((r) => r.trigger === 'catch-up' && r.status === 'ok'), workers);
    expect((await runHistory(db.url)).filter((r) => r.trigger === 'catch-up')).toHaveLength(1);
  });

  it('the cron starts the run at its time in service time, once across the two workers; beta, unscheduled, never runs', async () => {
    const since = Date.now();
    await until('a run started by the schedule after both workers were up to end ok',
      async () => (await runHistory(db.url)).some((r) => r.trigger === 'schedule' && r.status === 'ok' && r.due_at!.getTime() >= since - 60_000 && r.started_at.getTime() >= since), workers);
    const scheduled = (await jobs('alpha')).filter((j) => j.trigger === 'schedule');
    const dues = scheduled.map((j) => j.due_at);
    // One job a due time: the two workers' crons did not both queue it.
    expect(new Set(dues).size, JSON.stringify(scheduled)).toBe(dues.length);
    for (const job of scheduled) {
      const due = new Date(job.due_at!);
      expect(due.getTime() % 60_000).toBe(0);
      expect([HOUR, (HOUR + 1) % 24]).toContain(serviceHour(due));
      // Queued at its time, not before.
      expect(job.created_on.getTime()).toBeGreaterThanOrEqual(due.getTime());
    }
    const runs = (await runHistory(db.url)).filter((r) => r.trigger === 'schedule');
    for (const run of runs) expect(run.started_at.getTime()).toBeGreaterThanOrEqual(run.due_at!.getTime());
    expect(new Set(runs.filter((r) => r.attempt === 0).map((r) => r.due_at!.toISOString())).size).toBe(runs.filter((r) => r.attempt === 0).length);
    expect(await jobs('beta')).toEqual([]);
    expectNoOverlap(await runHistory(db.url));
  });
});
