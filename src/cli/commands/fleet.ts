/**
 * `wds-files fleet worker | status | run` (DESIGN.md section 14): many companies on PostgreSQL,
 * with pg-boss as the job engine. The work is in src/fleet, loaded only when a command runs.
 */
import type { Argv, CommandModule } from 'yargs';
import { DEFAULT_SERVICE_TIME_ZONE } from '../../schedule/service-time.js';
import { redact, registerSecret } from '../../util/redact.js';
import { stopSignal } from '../stop-signal.js';
import { UsageError } from '../connection.js';
import { EXIT } from '../exit-codes.js';
import { leafCommand } from '../help-text.js';
import { databaseUrl, type DatabaseArgs } from '../database.js';

export const fleetCommand: CommandModule = {
  command: 'fleet',
  describe: 'Many companies on many machines: workers on PostgreSQL and pg-boss, their status, a run now',
  builder: (y: Argv) => y
    .command(fleetWorkerCommand)
    .command(fleetStatusCommand)
    .command(fleetRunCommand)
    .demandCommand(1, 'name a fleet command'),
  handler: () => undefined,
};

/** A line of the worker's log: stderr, with the time, redacted (the database password and the consumer secrets are registered). */
const log = (line: string): void => {
  process.stderr.write(`${new Date().toISOString()} ${redact(line)}\n`);
};

const withDatabase = <T>(y: Argv<T>): Argv<T & DatabaseArgs> =>
  y.option('database', { type: 'string', describe: 'PostgreSQL URL, postgres://USER:PASSWORD@HOST:PORT/DB (env WDS_DATABASE_URL)' }) as unknown as Argv<T & DatabaseArgs>;

/** The fleet's database: --database or WDS_DATABASE_URL, required here; the URL checked as every command checks it. */
async function fleetDatabaseUrl(argv: DatabaseArgs): Promise<string> {
  const url = databaseUrl(argv);
  if (!url) throw new UsageError('name the fleet\'s PostgreSQL with --database postgres://USER:PASSWORD@HOST:PORT/DB (or WDS_DATABASE_URL)');
  const { databaseUrlProblem } = await import('../../fleet/database.js');
  const problem = databaseUrlProblem(url);
  if (problem) throw new UsageError(`${argv.database !== undefined ? '--database' : 'WDS_DATABASE_URL'} ${problem}`);
  registerSecret(decodeURIComponent(new URL(url).password));
  return url;
}

/** The lease from --lease, else WDS_FLEET_LEASE, else 45 s; every other interval follows from it. */
async function timing(lease?: number) {
  const { fleetTiming } = await import('../../fleet/queue.js');
  try {
    return fleetTiming(lease === undefined ? process.env : { ...process.env, WDS_FLEET_LEASE: String(lease) });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/**
 * The database and pg-boss as a client (no maintenance, no cron), for status and run, and for the
 * webhook receiver in fleet mode (which logs outages and connects within `connectMs`).
 */
export async function openClient(argv: DatabaseArgs, options: { log?: (line: string) => void; max?: number; connectMs?: number } = {}) {
  return (await openClientWhenUp(argv, options))!;
}

/**
 * The fleet's database, as openClient opens it; with `waitFor`, a database out of reach is waited
 * for (told once through `log`, as a fleet worker does) until it answers, or null once `waitFor`
 * aborts: a service started before its database, as after a reboot of both, is not a failure.
 */
export async function openClientWhenUp(argv: DatabaseArgs, options: { log?: (line: string) => void; max?: number; connectMs?: number; waitFor?: AbortSignal }) {
  const url = await fleetDatabaseUrl(argv);
  const [{ FleetDatabase, migrate, untilAborted }, { startBoss }] = await Promise.all([import('../../fleet/database.js'), import('../../fleet/queue.js')]);
  const db = new FleetDatabase(url, options.log ?? (() => undefined), { max: options.max ?? 2, connectMs: options.connectMs });
  const signal = options.waitFor;
  try {
    if (signal) {
      try {
        await db.untilReached(() => untilAborted(migrate(db), signal), { everyMs: 2000, signal });
      } catch (error) {
        if (!signal.aborted) throw error;
        await db.close().catch(() => undefined);
        return null;
      }
    } else {
      await migrate(db);
    }
    const boss = await startBoss(db, await timing(), 'client', () => undefined);
    return { db, boss, close: async () => {
      await boss.stop({ graceful: false, close: false, wait: false }).catch(() => undefined);
      await db.close();
    } };
  } catch (error) {
    await db.close().catch(() => undefined);
    throw new Error(redact(`the database ${db.shown} cannot be used: ${(error as Error).message}`));
  }
}

/** The companies file read, or a usage error after each of its problems, printed at its line. */
export async function readCompanies(file: string, who: string) {
  const { loadCompanies, CompaniesFileError } = await import('../../fleet/companies.js');
  try {
    return await loadCompanies(file);
  } catch (error) {
    if (!(error instanceof CompaniesFileError)) throw error;
    for (const p of error.problems) process.stderr.write(`${redact(`${p.file}:${p.line}:${p.column}: ${p.message}`)}\n`);
    throw new UsageError(`${who} did not start: ${error.problems.length} problem${error.problems.length === 1 ? '' : 's'} above`);
  }
}

// ---- fleet worker ----

interface WorkerArgs extends DatabaseArgs {
  companies: string;
  concurrency: number;
  'status-port'?: number;
  'status-host': string;
  timezone?: string;
  lease?: number;
}

const fleetWorkerCommand = leafCommand<WorkerArgs>({
  command: 'worker',
  describe: 'Run the companies\' pipelines at their times, taking runs from PostgreSQL with pg-boss (start as many as you like, on any machines)',
  builder: (y: Argv) => withDatabase(y)
    .option('companies', { type: 'string', demandOption: true, describe: 'The companies file: each company\'s service, credentials and pipeline files' })
    .option('concurrency', { type: 'number', default: 4, describe: 'Runs at a time in this worker' })
    .option('status-port', { type: 'number', describe: 'Serve /healthz and /metrics (Prometheus, with a company label) on this port; 0 picks a free one' })
    .option('status-host', { type: 'string', default: '127.0.0.1', describe: 'Address the status port listens on' })
    .option('timezone', { type: 'string', describe: `The service's time zone, in which cron times are read (env WDS_TIMEZONE; default ${DEFAULT_SERVICE_TIME_ZONE})` })
    .option('lease', { type: 'number', describe: 'Seconds a run\'s lease lasts without this worker\'s renewal (env WDS_FLEET_LEASE; default 45)' }) as unknown as Argv<WorkerArgs>,
  handler: async (argv) => {
    const url = await fleetDatabaseUrl(argv);
    if (!Number.isInteger(argv.concurrency) || argv.concurrency < 1 || argv.concurrency > 256) throw new UsageError('--concurrency must be a whole number from 1 to 256');
    const port = argv['status-port'];
    if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) throw new UsageError('--status-port must be a whole number from 0 to 65535 (0: any free port)');
    const timeZone = argv.timezone ?? process.env.WDS_TIMEZONE ?? DEFAULT_SERVICE_TIME_ZONE;
    try {
      new Intl.DateTimeFormat('en', { timeZone });
    } catch {
      throw new UsageError(`--timezone (or WDS_TIMEZONE) must be an IANA time zone such as Asia/Tokyo, not "${timeZone}"`);
    }
    const [{ FleetWorker }, { startStatusServer }] = await Promise.all([import('../../fleet/worker.js'), import('../../schedule/status-server.js')]);
    const companies = await readCompanies(argv.companies, 'the worker');
    const signal = stopSignal();
    const worker = new FleetWorker({ database: url, companies, concurrency: argv.concurrency, timeZone, timing: await timing(argv.lease), signal, log });
    const status = port === undefined
      ? null
      : await startStatusServer({ port, host: argv['status-host'], health: () => worker.health(), metrics: worker.metrics }).catch((error: Error) => {
        throw new UsageError(`--status-port ${port} on ${argv['status-host']} cannot be served: ${error.message}`);
      });
    if (status) log(`status: ${status.url}/healthz and ${status.url}/metrics`);
    let started: boolean;
    try {
      started = await worker.start();
    } catch (error) {
      await status?.close();
      throw new Error(redact(`the worker could not start on ${url}: ${(error as Error).message}`));
    }
    await worker.finished();
    await status?.close();
    log(started
      ? `stopped (${String(signal.reason)}); every run under way has ended, and those cut short are back in the queue for another worker`
      : `stopped (${String(signal.reason)}) while waiting for the database; nothing was started`);
    process.exit(EXIT.ok);
  },
}, {
  examples: [
    ['wds-files fleet worker --database postgres://wds:PASSWORD@db:5432/wds --companies companies.yaml', 'one worker; start more on other machines with the same companies file'],
    ['wds-files fleet worker --companies companies.yaml --concurrency 8 --status-port 9464', 'the URL from WDS_DATABASE_URL, with /healthz and /metrics'],
  ],
  exits: { 0: 'stopped by SIGTERM or Ctrl-C once the runs under way had ended', 1: 'the database refused it (a wrong password, no such database)', 2: 'the companies file or a pipeline file has a problem, or an option is wrong: nothing started' },
  env: ['WDS_DATABASE_URL', 'WDS_TIMEZONE', 'WDS_FLEET_LEASE', 'XDG_STATE_HOME', 'XDG_CACHE_HOME'],
});

// ---- fleet status ----

interface StatusArgs extends DatabaseArgs {
  json: boolean;
}

const fleetStatusCommand = leafCommand<StatusArgs>({
  command: 'status',
  describe: 'Each company\'s pipelines: the last run and how it ended, a run under way or queued, the next run',
  builder: (y: Argv) => withDatabase(y)
    .option('json', { type: 'boolean', default: false, describe: 'One JSON array on stdout' }) as unknown as Argv<StatusArgs>,
  handler: async (argv) => {
    const client = await openClient(argv);
    try {
      const { fleetStatus } = await import('../../fleet/status.js');
      const rows = await fleetStatus(client.db);
      if (argv.json) {
        process.stdout.write(`${redact(JSON.stringify(rows, null, 2))}\n`);
        return;
      }
      if (!rows.length) {
        process.stdout.write('no company yet: start a worker with --companies FILE, or queue a run with fleet run\n');
        return;
      }
      const lines = rows.map((row) => [
        `${row.company}/${row.pipeline}`,
        row.state === 'idle' ? '' : `${row.state}${row.since ? ` since ${row.since}` : ''}`,
        row.last_run ? `last ${row.last_run.status} ${row.last_run.finished_at ?? row.last_run.started_at}${row.last_run.error ? `: ${row.last_run.error}` : ''}` : 'never run',
        row.next_run_service_time ? `next ${row.next_run_service_time}` : row.schedule ? '' : 'no schedule',
      ].filter(Boolean).join('  '));
      process.stdout.write(`${redact(lines.join('\n'))}\n`);
    } finally {
      await client.close();
    }
  },
}, {
  examples: [['wds-files fleet status --database postgres://wds:PASSWORD@db:5432/wds', 'one line a company and pipeline'], ['wds-files fleet status --json', 'the same as JSON (URL from WDS_DATABASE_URL)']],
  exits: { 0: 'printed', 1: 'the database cannot be reached' },
  env: ['WDS_DATABASE_URL'],
});

// ---- fleet run ----

interface RunArgs extends DatabaseArgs {
  company: string;
  pipeline: string;
}

const fleetRunCommand = leafCommand<RunArgs>({
  command: 'run <company> <pipeline>',
  describe: 'Queue one run of a company\'s pipeline now; a worker takes it as soon as one has room (none needs to be up)',
  builder: (y: Argv) => withDatabase(y)
    .positional('company', { type: 'string', demandOption: true, describe: 'The company\'s name in the companies file' })
    .positional('pipeline', { type: 'string', demandOption: true, describe: 'The pipeline\'s name (its name:, not its file)' }) as unknown as Argv<RunArgs>,
  handler: async (argv) => {
    const client = await openClient(argv);
    try {
      const [{ knownPipeline }, { enqueueRun, runKey }] = await Promise.all([import('../../fleet/status.js'), import('../../fleet/queue.js')]);
      const key = runKey(argv.company, argv.pipeline);
      const known = await knownPipeline(client.db, argv.company, argv.pipeline);
      if (known.companyKnown && !known.known) {
        throw new UsageError(`company ${argv.company} has no pipeline named "${argv.pipeline}"; its pipelines are ${known.pipelines.join(', ')}`);
      }
      const result = await enqueueRun(client.db, client.boss, { company: argv.company, pipeline: argv.pipeline, trigger: 'manual' });
      if ('queued' in result) {
        process.stdout.write(`${key}: queued (job ${result.queued})${known.known ? '' : '; no worker has named this company yet: a worker whose companies file names it will run it'}\n`);
        return;
      }
      const { live } = result;
      const when = new Date(live.started_on ?? live.created_on).toISOString();
      process.stdout.write(`${key}: not queued again: its run ${live.state === 'active' ? `is under way since ${when}` : live.state === 'retry' ? `waits to be retried (since ${when})` : `is already queued since ${when}`} (job ${live.id}); one run of a pipeline at a time\n`);
    } finally {
      await client.close();
    }
  },
}, {
  examples: [['wds-files fleet run --database postgres://wds:PASSWORD@db:5432/wds acme nightly-attachments', 'acme\'s nightly archive now, by the first worker with room']],
  exits: { 0: 'queued, or a run of it is already queued or under way', 1: 'the database cannot be reached', 2: 'the company has no such pipeline' },
  env: ['WDS_DATABASE_URL'],
});
