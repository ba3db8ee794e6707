/**
 * What `webhook serve` does beyond storing deliveries (DESIGN.md section 15): its own
 * reconciliation, at start and every `--reconcile-every`, and the pipelines of `--pipelines` run
 * after the events they name (`on:`), both through the same code as `webhook reconcile` and
 * `schedule`. Every event stored, delivered or reconciled, goes to the pipelines.
 */
import type { Argv } from 'yargs';
import { connect, withConnection, UsageError, type ConnectionArgs } from './connection.js';
import { parseDuration } from '../util/duration.js';
import { redact } from '../util/redact.js';
import type { InboxEvent, WebhookInbox } from '../webhooks/inbox.js';

export interface ReactionArgs extends ConnectionArgs {
  pipelines?: string[];
  'reconcile-every'?: string;
}

/** The default time between two reconciliations of `serve`. */
const DEFAULT_RECONCILE_EVERY = '6h';

/** `--pipelines`, `--reconcile-every` and the connection reconciliation uses. */
export function withReactions<T>(y: Argv<T>): Argv<T & ReactionArgs> {
  return withConnection(y)
    .option('pipelines', { type: 'string', array: true, describe: 'Pipeline files, or folders of them, whose `on:` names member events: each runs after such events (waiting out the service\'s night, read in env WDS_TIMEZONE, default Asia/Tokyo)' })
    .option('reconcile-every', { type: 'string', describe: `Reconcile at start and then this often (e.g. 6h, 30m; 0: never; default ${DEFAULT_RECONCILE_EVERY}), when --base-url or WDS_BASE_URL names the service` }) as unknown as Argv<T & ReactionArgs>;
}

export interface Reactions {
  /** Events just stored in the inbox: the pipelines that name them become due. */
  notify: (events: readonly InboxEvent[]) => void;
  /** Ends the reconcile and the pipeline runs under way (after the stop signal). */
  finished: () => Promise<void>;
}

interface Context {
  inbox: WebhookInbox;
  signal: AbortSignal;
  log: (line: string) => void;
  /** The metrics of `serve`: last reconciliation, pipelines started. */
  metrics: { reconciled: (at: Date, stored: number) => void; pipelineStarted: (pipeline: string) => void };
}

/** Checks the options and starts the reconciliation loop and the pipelines; a problem is a usage error before anything starts. */
export async function startReactions(argv: ReactionArgs, ctx: Context): Promise<Reactions> {
  const every = argv['reconcile-every'] ?? DEFAULT_RECONCILE_EVERY;
  const everyMs = parseDuration(every);
  if (everyMs === null) throw new UsageError(`--reconcile-every must be a duration such as 6h or 30m (0: never), not "${every}"`);
  const hasService = Boolean(argv['base-url'] ?? process.env.WDS_BASE_URL);
  if (everyMs > 0 && argv['reconcile-every'] !== undefined && !hasService) throw new UsageError('--reconcile-every needs the service: give --base-url (or WDS_BASE_URL) and its credentials');
  const runs = argv.pipelines?.length ? await startPipelines(argv.pipelines, ctx) : null;
  const notify = (events: readonly InboxEvent[]): void => runs?.notify(events);

  let loop: import('../webhooks/reconcile-loop.js').ReconcileLoop | null = null;
  let close = async (): Promise<void> => undefined;
  if (everyMs > 0 && hasService) {
    const [connection, { ReconcileLoop }] = await Promise.all([connect(argv), import('../webhooks/reconcile-loop.js')]);
    close = () => connection.close();
    loop = new ReconcileLoop(connection.client, ctx.inbox, {
      everyMs, signal: ctx.signal, log: ctx.log,
      onReconciled: (result, at) => {
        ctx.metrics.reconciled(at, result.stored.length);
        notify(result.stored);
      },
    });
    loop.start();
  } else if (everyMs > 0) {
    ctx.log('no --base-url or WDS_BASE_URL: no reconciliation here (run `wds-files webhook reconcile` with the service named)');
  }
  return {
    notify,
    finished: async () => {
      await loop?.finished();
      await runs?.finished();
      await close();
    },
  };
}

async function startPipelines(paths: string[], ctx: Context): Promise<import('../schedule/event-runs.js').EventRuns> {
  const [{ EventRuns }, { loadScheduledPipelines, runnerOf }, { DEFAULT_SERVICE_TIME_ZONE }] = await Promise.all([
    import('../schedule/event-runs.js'), import('../schedule/pipelines.js'), import('../schedule/service-time.js'),
  ]);
  const loaded = await loadScheduledPipelines(paths, process.env, 'events');
  if (loaded.problems.length) {
    for (const p of loaded.problems) process.stderr.write(`${redact(`${p.file}:${p.line}:${p.column}: ${p.message}`)}\n`);
    throw new UsageError(`--pipelines: ${loaded.problems.length} problem${loaded.problems.length === 1 ? '' : 's'} above; nothing was started`);
  }
  for (const file of loaded.unscheduled) ctx.log(`${file}: no \`on:\` events; not run by webhook serve`);
  if (!loaded.pipelines.length) throw new UsageError('--pipelines: none of the pipeline files names member events (`on: [member_created]`); nothing to run');
  const runs = new EventRuns(loaded.pipelines.map((pipeline) => ({
    runner: runnerOf(pipeline, `wds-files webhook serve (${pipeline.name})`, { log: ctx.log }),
    events: pipeline.on!.events,
    debounceMs: pipeline.on!.debounce_ms,
  })), {
    signal: ctx.signal, log: ctx.log, timeZone: process.env.WDS_TIMEZONE ?? DEFAULT_SERVICE_TIME_ZONE,
    onStart: (name) => ctx.metrics.pipelineStarted(name),
  });
  for (const p of runs.pipelines) ctx.log(`${p.name}: runs ${Math.round(p.debounceMs / 1000)} s after ${p.events.join(', ')}`);
  return runs;
}
