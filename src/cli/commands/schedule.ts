/**
 * `wds-files schedule [pipelines/ | FILE...] [--status-port N]`: runs each pipeline with a
 * `schedule` at its times, in the foreground, for systemd and containers (DESIGN.md section 9).
 * SIGTERM or Ctrl-C starts nothing new, lets the runs under way end cleanly, and exits 0: a
 * scheduler asked to stop that stopped cleanly has succeeded, and systemd counts only 0 (not 143)
 * as a clean exit without extra configuration.
 */
import type { Argv } from 'yargs';
import { DEFAULT_SERVICE_TIME_ZONE } from '../../schedule/service-time.js';
import { redact, redactValue } from '../../util/redact.js';
import { stopSignal } from '../stop-signal.js';
import { UsageError } from '../connection.js';
import { DATABASE_OPTION } from '../database.js';
import { EXIT } from '../exit-codes.js';
import { CONNECTION_ENV, leafCommand } from '../help-text.js';

interface ScheduleArgs {
  paths?: string[];
  'status-port'?: number;
  'status-host': string;
  timezone?: string;
  json: boolean;
  database?: string;
}

const validTimeZone = (zone: string): boolean => {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
};

/** The options checked, once; zod (and the scheduler below) load only when the command runs. */
async function parseOptions(input: { statusPort?: number; statusHost: string; timeZone: string }) {
  const { z } = await import('zod');
  return z.object({
    statusPort: z.int({ error: '--status-port must be a whole number from 0 to 65535 (0: any free port)' }).min(0, '--status-port must be from 0 to 65535').max(65535, '--status-port must be from 0 to 65535').optional(),
    statusHost: z.string().min(1, '--status-host must name an address, such as 127.0.0.1'),
    timeZone: z.string().superRefine((zone, ctx) => {
      if (!validTimeZone(zone)) ctx.addIssue({ code: 'custom', message: `--timezone (or WDS_TIMEZONE) must be an IANA time zone such as Asia/Tokyo, not "${zone}"` });
    }),
  }).safeParse(input);
}

/** A line of the scheduler's log: stderr, with the time, redacted. */
const log = (line: string): void => {
  process.stderr.write(`${new Date().toISOString()} ${redact(line)}\n`);
};

export const scheduleCommand = leafCommand<ScheduleArgs>({
  command: 'schedule [paths..]',
  describe: 'Run the pipelines that have a schedule at their times, in the foreground (for systemd and containers)',
  builder: (y: Argv) =>
    y.positional('paths', { type: 'string', array: true, describe: 'Pipeline files, or folders of them (*.yaml, *.yml); default: pipelines/' })
      .option('status-port', { type: 'number', describe: 'Serve /healthz and /metrics (Prometheus) on this port; 0 picks a free one' })
      .option('status-host', { type: 'string', default: '127.0.0.1', describe: 'Address the status port listens on' })
      .option('timezone', { type: 'string', describe: `The service's time zone, in which cron times are read (env WDS_TIMEZONE; default ${DEFAULT_SERVICE_TIME_ZONE})` })
      .option('json', { type: 'boolean', default: false, describe: 'Each run\'s summary as one JSON line on stdout' })
      .option('database', { type: 'string', describe: DATABASE_OPTION }) as unknown as Argv<ScheduleArgs>,
  handler: async (argv) => {
    const parsed = await parseOptions({
      statusPort: argv['status-port'],
      statusHost: argv['status-host'],
      timeZone: argv.timezone ?? process.env.WDS_TIMEZONE ?? DEFAULT_SERVICE_TIME_ZONE,
    });
    if (!parsed.success) throw new UsageError(parsed.error.issues.map((issue) => issue.message).join('; '));
    const options = parsed.data;
    const [{ Scheduler }, { startStatusServer }, { defaultPaths, jobOf, loadScheduledPipelines }] = await Promise.all([
      import('../../schedule/scheduler.js'), import('../../schedule/status-server.js'), import('../../schedule/pipelines.js'),
    ]);

    const loaded = await loadScheduledPipelines(defaultPaths(argv.paths));
    if (loaded.problems.length) {
      for (const p of loaded.problems) process.stderr.write(`${redact(`${p.file}:${p.line}:${p.column}: ${p.message}`)}\n`);
      throw new UsageError(`nothing was scheduled: ${loaded.problems.length} problem${loaded.problems.length === 1 ? '' : 's'} above`);
    }
    for (const file of loaded.unscheduled) log(`${file}: no schedule; not run by the scheduler`);
    if (!loaded.pipelines.length) throw new UsageError('none of the pipeline files has a schedule; nothing to run');

    const { openSharedDatabase } = await import('../database.js');
    const shared = await openSharedDatabase(argv);
    const signal = stopSignal();
    const jobs = loaded.pipelines.map((pipeline) => jobOf(pipeline, {
      log,
      windowStores: shared?.windowStores,
      journals: shared?.journals,
      onSummary: argv.json ? (summary) => process.stdout.write(`${JSON.stringify(redactValue(summary))}\n`) : undefined,
    }));
    const scheduler = new Scheduler(jobs, { timeZone: options.timeZone, signal, log });
    // The saved states first: /healthz must not answer ok for a moment after a restart.
    await scheduler.load();
    const status = options.statusPort === undefined
      ? null
      : await startStatusServer({ port: options.statusPort, host: options.statusHost, health: () => scheduler.health(), metrics: scheduler.metrics }).catch((error: Error) => {
        throw new UsageError(`--status-port ${options.statusPort} on ${options.statusHost} cannot be served: ${error.message}`);
      });
    if (status) log(`status: ${status.url}/healthz and ${status.url}/metrics`);
    await scheduler.start();
    log(`scheduling ${jobs.length} pipeline${jobs.length === 1 ? '' : 's'}; SIGTERM or Ctrl-C stops once the runs under way have ended`);
    await scheduler.finished();
    await status?.close();
    await shared?.close();
    log(`stopped (${String(signal.reason)}); every run under way has ended`);
    // Keep-alive sockets of the last requests would hold the process a few seconds more.
    process.exit(EXIT.ok);
  },
}, {
  examples: [
    ['wds-files schedule pipelines/', 'every pipeline file of the folder that has a schedule, at its times'],
    ['wds-files schedule pipelines/ --status-port 9464', 'with /healthz and /metrics for a monitor'],
  ],
  exits: { 0: 'stopped by SIGTERM or Ctrl-C once the runs under way had ended', 2: 'a pipeline file has a problem, or none has a schedule: nothing was scheduled' },
  env: [...CONNECTION_ENV, 'WDS_TIMEZONE'],
});
