/**
 * `wds-files webhook ...`: receiving the service's member events (DESIGN.md section 15). Each
 * subcommand is its own leaf command below; the group only names them. The work is in
 * src/webhooks, loaded only when a command runs.
 */
import type { Argv, CommandModule } from 'yargs';
import { readFile, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { connect, say, withConnection, UsageError, type ConnectionArgs } from '../connection.js';
import { requestCounts, withEnding, type Ending } from '../ending.js';
import { CONNECTION_ENV, leafCommand } from '../help-text.js';
import { startReactions, withReactions, type ReactionArgs } from '../webhook-reactions.js';
import { verbosity } from '../log.js';
import { stopSignal } from '../stop-signal.js';
import { parseDuration } from '../../util/duration.js';
import { redact, registerSecret } from '../../util/redact.js';
import { databaseUrl } from '../database.js';
import type { DeliveryOutcome } from '../../webhooks/receiver.js';
import type { FleetReconcileResult } from '../../fleet/reconcile.js';

export const webhookCommand: CommandModule = {
  command: 'webhook',
  describe: 'Webhooks: receive the member events, list them, register a setting, find the events never delivered',
  builder: (y: Argv) => y
    .command(webhookServeCommand)
    .command(webhookEventsCommand)
    .command(webhookRegisterCommand)
    .command(webhookReconcileCommand)
    .demandCommand(1, 'name a webhook command'),
  handler: () => undefined,
};

const inboxModule = () => import('../../webhooks/inbox.js');

interface InboxArgs {
  inbox?: string;
  json: boolean;
}

/** `--inbox` and `--json`, shared by the webhook commands. */
const withInbox = <T>(y: Argv<T>, json: string): Argv<T & InboxArgs> =>
  y.option('inbox', { type: 'string', describe: 'The inbox folder (default $XDG_STATE_HOME/wds-files/webhooks)' })
    .option('json', { type: 'boolean', default: false, describe: json }) as unknown as Argv<T & InboxArgs>;

/** The inbox folder the user named, or the default one. */
async function inboxFolder(argv: InboxArgs): Promise<string> {
  return argv.inbox === undefined ? (await inboxModule()).defaultInboxFolder() : resolve(argv.inbox);
}

/** A line of the receiver's log: stderr, with the time, redacted (the token is registered as a secret). */
const log = (line: string): void => {
  process.stderr.write(`${new Date().toISOString()} ${redact(line)}\n`);
};

// ---- webhook serve ----

interface ServeArgs extends InboxArgs, Omit<ReactionArgs, 'json'> {
  companies?: string;
  port: number;
  host: string;
  path: string;
  'tls-cert'?: string;
  'tls-key'?: string;
  'token-file'?: string;
  'status-port'?: number;
  'status-host': string;
}

/** The webhook secret: `--token-file`, else WDS_WEBHOOK_TOKEN; never a flag's value, which `ps` would show. */
async function readToken(argv: ServeArgs): Promise<string> {
  let token: string;
  if (argv['token-file'] !== undefined) {
    const text = await readFile(argv['token-file'], 'utf8').catch((error: Error) => {
      throw new UsageError(`--token-file ${argv['token-file']} cannot be read: ${error.message}`);
    });
    // Its first line, as `webhook register` reads and writes it.
    token = text.split(/\r?\n/)[0]!;
    if (!token) throw new UsageError(`--token-file ${argv['token-file']} is empty; it must hold the webhook setting's secret`);
  } else {
    token = process.env.WDS_WEBHOOK_TOKEN ?? '';
    if (!token) throw new UsageError('the webhook secret is needed: set WDS_WEBHOOK_TOKEN or give --token-file FILE');
  }
  registerSecret(token);
  return token;
}

async function tlsOptions(argv: ServeArgs): Promise<{ cert: Buffer; key: Buffer } | null> {
  const cert = argv['tls-cert'];
  const key = argv['tls-key'];
  if (cert === undefined && key === undefined) return null;
  if (cert === undefined || key === undefined) throw new UsageError('--tls-cert and --tls-key go together: give both, or neither for plain HTTP');
  const read = (file: string, flag: string) => readFile(file).catch((error: Error) => {
    throw new UsageError(`${flag} ${file} cannot be read: ${error.message}`);
  });
  return { cert: await read(cert, '--tls-cert'), key: await read(key, '--tls-key') };
}

/** Counts and logs what became of each request, and gives it to the metrics. */
function outcomeRecorder(metrics: { record: (outcome: DeliveryOutcome) => void }, counts: { stored: number; duplicates: number; refused: number }) {
  return (outcome: DeliveryOutcome): void => {
    metrics.record(outcome);
    if (outcome.outcome === 'stored') {
      counts.stored += 1;
      // One line per event only with -v: at a thousand deliveries a second the log would cost more than the storing.
      if (verbosity() >= 1) for (const event of outcome.events) log(`stored ${event.event} ${event.event_time} (${event.codes.length} code${event.codes.length === 1 ? '' : 's'})`);
    } else if (outcome.outcome === 'duplicate') counts.duplicates += 1;
    else {
      counts.refused += 1;
      log(`refused (${outcome.status} ${outcome.reason}): ${outcome.message}${outcome.error ? `: ${outcome.error.message}` : ''}`);
    }
  };
}

async function serve(argv: ServeArgs, ending: Ending): Promise<void> {
  if (!argv.path.startsWith('/')) throw new UsageError(`--path must start with /, as ${argv.path} does not`);
  if (argv.companies !== undefined) return serveFleet(argv, ending);
  const token = await readToken(argv);
  const tls = await tlsOptions(argv);
  const folder = await inboxFolder(argv);
  const [{ WebhookInbox }, { createWebhookReceiver }, { WebhookMetrics }, { startStatusServer }, { startWebhookServer }] = await Promise.all([
    inboxModule(), import('../../webhooks/receiver.js'), import('../../webhooks/metrics.js'), import('../../schedule/status-server.js'), import('../../webhooks/server.js'),
  ]);
  const inbox = await WebhookInbox.open(folder).catch((error: Error) => {
    throw new Error(`the webhook inbox ${folder} cannot be opened: ${error.message}`);
  });
  const metrics = new WebhookMetrics(inbox);
  const counts = { stored: 0, duplicates: 0, refused: 0 };
  ending.counts = counts;
  const signal = stopSignal();
  // Reconciliation and the pipelines run on events: their problems are usage errors before the port opens.
  const reactions = await startReactions(argv, { inbox, signal, log, metrics }).catch(async (error: unknown) => {
    await inbox.close();
    throw error;
  });
  const handler = createWebhookReceiver({
    token, inbox, path: argv.path,
    onEvent: (events) => reactions.notify(events),
    onOutcome: outcomeRecorder(metrics, counts),
  });
  const server = await startWebhookServer({ handler, port: argv.port, host: argv.host, tls }).catch((error: Error) => {
    throw new UsageError(`--port ${argv.port} on ${argv.host} cannot be served: ${error.message}`);
  });
  const status = argv['status-port'] === undefined
    ? null
    : await startStatusServer({ port: argv['status-port'], host: argv['status-host'], health: () => metrics.health(), metrics }).catch(async (error: Error) => {
      await server.close();
      throw new UsageError(`--status-port ${argv['status-port']} on ${argv['status-host']} cannot be served: ${error.message}`);
    });
  log(`receiving webhooks at ${server.url}${argv.path}; inbox ${folder}`);
  if (status) log(`status: ${status.url}/healthz and ${status.url}/metrics`);
  if (!signal.aborted) await new Promise((done) => signal.addEventListener('abort', done, { once: true }));
  // Stops accepting, lets the deliveries under way be stored and answered, then closes the inbox.
  await server.close();
  // The reconcile and the pipeline runs under way end cleanly, as a stopped `schedule`'s do.
  await reactions.finished();
  await inbox.close();
  await status?.close();
  log(`stopped (${String(signal.reason)}): ${counts.stored} stored, ${counts.duplicates} duplicates, ${counts.refused} refused`);
  ending.body.inbox = folder;
  ending.print({ inbox: folder, ...counts }, () => []);
}

/**
 * Fleet mode (`--companies` with `--database`): each company's deliveries at PATH/COMPANY, each
 * committed to PostgreSQL before its 2xx, and the company's pipelines whose `on:` names the event
 * queued there for the fleet's workers (src/fleet/webhook-events.ts).
 */
async function serveFleet(argv: ServeArgs, ending: Ending): Promise<void> {
  if (!databaseUrl(argv)) throw new UsageError('--companies stores each company\'s deliveries in the fleet\'s PostgreSQL: give --database postgres://USER:PASSWORD@HOST:PORT/DB (or WDS_DATABASE_URL)');
  if (argv.inbox !== undefined) throw new UsageError('--inbox and --companies exclude each other: with --companies the deliveries go to the database');
  if (argv.pipelines?.length) throw new UsageError('--pipelines and --companies exclude each other: with --companies each company\'s pipelines come from the companies file, and the fleet\'s workers run them');
  if (argv['reconcile-every'] !== undefined) throw new UsageError('--reconcile-every is not for --companies: run `wds-files webhook reconcile --database URL --companies FILE` from a schedule instead');
  const token = await readToken(argv);
  const tls = await tlsOptions(argv);
  const [{ openClientWhenUp, readCompanies }, { CompanyEventStore }, { createWebhookReceiver }, { WebhookMetrics }, { startStatusServer }, { startWebhookServer }] = await Promise.all([
    import('./fleet.js'), import('../../fleet/webhook-events.js'), import('../../webhooks/receiver.js'), import('../../webhooks/metrics.js'),
    import('../../schedule/status-server.js'), import('../../webhooks/server.js'),
  ]);
  const companies = await readCompanies(argv.companies!, 'the receiver');
  const signal = stopSignal();
  // A connection that takes longer than 3 s would leave too little of the service's 10 s for the answer.
  const client = await openClientWhenUp(argv, { log, max: 8, connectMs: 3_000, waitFor: signal });
  if (!client) {
    log(`stopped (${String(signal.reason)}) while waiting for the database; nothing was received`);
    return;
  }
  const stores = new Map(companies.map((company) => [company.name, new CompanyEventStore(client.db, client.boss, company, log)]));
  const prefix = argv.path.endsWith('/') ? argv.path : `${argv.path}/`;
  const metrics = new WebhookMetrics(null);
  const counts = { stored: 0, duplicates: 0, refused: 0 };
  ending.counts = counts;
  const handler = createWebhookReceiver({
    token,
    route: {
      storeOf: (pathname) => (pathname.startsWith(prefix) ? stores.get(pathname.slice(prefix.length)) ?? null : null),
      notFound: `deliveries are accepted at ${prefix}COMPANY, for each company of the companies file`,
    },
    onOutcome: outcomeRecorder(metrics, counts),
  });
  const server = await startWebhookServer({ handler, port: argv.port, host: argv.host, tls }).catch(async (error: Error) => {
    await client.close();
    throw new UsageError(`--port ${argv.port} on ${argv.host} cannot be served: ${error.message}`);
  });
  const status = argv['status-port'] === undefined
    ? null
    : await startStatusServer({ port: argv['status-port'], host: argv['status-host'], health: () => metrics.health(), metrics }).catch(async (error: Error) => {
      await server.close();
      await client.close();
      throw new UsageError(`--status-port ${argv['status-port']} on ${argv['status-host']} cannot be served: ${error.message}`);
    });
  log(`receiving webhooks at ${server.url}${prefix}COMPANY for ${companies.length} compan${companies.length === 1 ? 'y' : 'ies'}; stored in PostgreSQL at ${client.db.place}`);
  if (status) log(`status: ${status.url}/healthz and ${status.url}/metrics`);
  if (!signal.aborted) await new Promise((done) => signal.addEventListener('abort', done, { once: true }));
  await server.close();
  await status?.close();
  await client.close();
  log(`stopped (${String(signal.reason)}): ${counts.stored} stored, ${counts.duplicates} duplicates, ${counts.refused} refused`);
  ending.body.database = client.db.place;
  ending.print({ database: client.db.place, ...counts }, () => []);
}

export const webhookServeCommand = leafCommand<ServeArgs>({
  command: 'serve',
  describe: 'Receive the service\'s member events and store each in the inbox before answering 2xx',
  builder: (y: Argv) =>
    withInbox(withReactions(y), 'On stopping, one JSON line on stdout with what was received')
      .option('port', { type: 'number', demandOption: true, describe: 'The port deliveries come to; 0 picks a free one (printed)' })
      .option('host', { type: 'string', default: '127.0.0.1', describe: 'The address to listen on (0.0.0.0: every interface)' })
      .option('path', { type: 'string', default: '/', describe: 'The path deliveries are posted to; others answer 404' })
      .option('tls-cert', { type: 'string', describe: 'HTTPS: the certificate chain (PEM), with --tls-key' })
      .option('tls-key', { type: 'string', describe: 'HTTPS: its private key (PEM)' })
      .option('token-file', { type: 'string', describe: 'The webhook setting\'s secret, from FILE (else env WDS_WEBHOOK_TOKEN)' })
      .option('status-port', { type: 'number', describe: 'Serve /healthz and /metrics (Prometheus) on this port; 0 picks a free one' })
      .option('status-host', { type: 'string', default: '127.0.0.1', describe: 'Address the status port listens on' })
      .option('companies', { type: 'string', describe: 'Fleet mode: the fleet\'s companies file; each company\'s deliveries come to PATH/COMPANY, go to --database, and queue its pipelines whose on: names them' }) as unknown as Argv<ServeArgs>,
  handler: (argv) => withEnding(argv, 'webhook serve', (ending) => serve(argv, ending)),
}, {
  examples: [
    ['WDS_WEBHOOK_TOKEN=... wds-files webhook serve --port 8443 --tls-cert cert.pem --tls-key key.pem --host 0.0.0.0', 'HTTPS facing the service directly'],
    ['wds-files webhook serve --port 8080 --token-file /etc/wds/webhook-token --status-port 9464', 'behind a reverse proxy that ends TLS, with /healthz and /metrics'],
    ['wds-files webhook serve --port 8080 --token-file /etc/wds/webhook-token --pipelines pipelines/', 'also reconciling every 6 h, and running the pipelines whose on: names the events'],
    ['wds-files webhook serve --port 8080 --token-file /etc/wds/webhook-token --database postgres://wds:PASSWORD@db:5432/wds --companies companies.yaml', 'fleet mode: acme\'s deliveries at /acme, its on: pipelines run by the fleet\'s workers'],
  ],
  exits: { 0: 'stopped by SIGTERM or Ctrl-C once the deliveries under way were stored and answered', 1: 'the inbox cannot be opened, or the database refused it (one out of reach is waited for)', 2: 'a bad option, no secret, a pipeline file with a problem, or the port cannot be served' },
  env: [...CONNECTION_ENV, 'WDS_WEBHOOK_TOKEN', 'WDS_TIMEZONE'],
});

// ---- webhook events ----

interface EventsArgs extends InboxArgs {
  since?: string;
  database?: string;
  company?: string;
}

/** `--since`: an ISO time, or a duration back from now (`90m`, `2h`). */
function sinceOf(text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  const back = parseDuration(text);
  if (back !== null) return new Date(Date.now() - back);
  const at = Date.parse(text);
  if (!Number.isFinite(at)) throw new UsageError(`--since must be a time such as 2026-12-01T09:00:00Z or a duration such as 2h, not "${text}"`);
  return new Date(at);
}

const shownCodes = (codes: string[]): string => (codes.length <= 5 ? codes.join(',') : `${codes.slice(0, 5).join(',')},... (${codes.length} codes)`);

async function listEvents(argv: EventsArgs, ending: Ending): Promise<void> {
  const since = sinceOf(argv.since);
  if (databaseUrl(argv)) return listDatabaseEvents(argv, since, ending);
  if (argv.company !== undefined) throw new UsageError('--company names a company of the fleet\'s database: give --database too (or WDS_DATABASE_URL)');
  const folder = await inboxFolder(argv);
  if (!(await stat(folder).catch(() => null))?.isDirectory()) throw new UsageError(`there is no webhook inbox at ${folder} (webhook serve makes it)`);
  const { readInboxEvents } = await inboxModule();
  const counts: Record<string, number> = { events: 0, delivery: 0, reconciled: 0 };
  ending.counts = counts;
  if (argv.json) ending.printedOwn();
  for await (const event of readInboxEvents(folder, { since })) {
    counts.events! += 1;
    counts[event.source]! += 1;
    if (argv.json) process.stdout.write(`${JSON.stringify(event)}\n`);
    else console.log(`${event.received_at}  ${event.source.padEnd(10)}  ${event.event.padEnd(14)}  ${event.event_time}  ${shownCodes(event.codes)}`);
  }
}

/** The events `webhook serve --companies` stored in the fleet's database, each with its company. */
async function listDatabaseEvents(argv: EventsArgs, since: Date | undefined, ending: Ending): Promise<void> {
  if (argv.inbox !== undefined) throw new UsageError('--inbox and --database exclude each other: name the folder inbox or the fleet\'s database');
  const [{ openClient }, { databaseEvents }] = await Promise.all([import('./fleet.js'), import('../../fleet/webhook-events.js')]);
  const client = await openClient(argv);
  const counts: Record<string, number> = { events: 0, delivery: 0, reconciled: 0 };
  ending.counts = counts;
  if (argv.json) ending.printedOwn();
  try {
    for await (const event of databaseEvents(client.db, { company: argv.company, since })) {
      counts.events! += 1;
      counts[event.source]! += 1;
      if (argv.json) process.stdout.write(`${JSON.stringify(event)}\n`);
      else console.log(`${event.received_at}  ${event.company.padEnd(12)}  ${event.source.padEnd(10)}  ${event.event.padEnd(14)}  ${event.event_time}  ${shownCodes(event.codes)}`);
    }
  } finally {
    await client.close();
  }
}

export const webhookEventsCommand = leafCommand<EventsArgs>({
  command: 'events',
  describe: 'The events in the inbox, oldest first',
  builder: (y: Argv) =>
    withInbox(y, 'One JSON line per event: event, event_time, codes, received_at, source, id')
      .option('since', { type: 'string', describe: 'Only events received since this time (ISO 8601) or this long ago (30m, 2h)' })
      .option('database', { type: 'string', describe: 'The fleet\'s PostgreSQL (env WDS_DATABASE_URL): the events webhook serve --companies stored there, each with its company' })
      .option('company', { type: 'string', describe: 'With --database: only this company\'s events' }) as unknown as Argv<EventsArgs>,
  handler: (argv) => withEnding(argv, 'webhook events', (ending) => listEvents(argv, ending)),
}, {
  examples: [
    ['wds-files webhook events --since 1h', 'the events received in the last hour'],
    ['wds-files webhook events --json | jq -c \'select(.event == "member_created")\'', 'one JSON line per event, for scripts'],
    ['wds-files webhook events --database postgres://wds:PASSWORD@db:5432/wds --company acme', 'acme\'s events in the fleet\'s database'],
  ],
  exits: { 1: 'the inbox or the database cannot be read', 2: 'a bad option, or no inbox in that folder' },
  env: ['WDS_DATABASE_URL', 'XDG_STATE_HOME'],
});

// ---- webhook register ----

interface RegisterArgs extends ConnectionArgs {
  url: string;
  events?: string[];
  'allow-http': boolean;
  'token-file'?: string;
  'dry-run': boolean;
  report?: string;
}

export const webhookRegisterCommand = leafCommand<RegisterArgs>({
  command: 'register',
  describe: 'Add one webhook setting through the API, with a secret token kept in a file of mode 0600',
  builder: (y: Argv) =>
    withConnection(y)
      .option('url', { type: 'string', demandOption: true, describe: 'Where the service delivers the events: https://... (the receiver, e.g. behind a reverse proxy)' })
      .option('events', { type: 'string', array: true, describe: 'member_created, member_updated, member_deleted (space- or comma-separated); default: all three' })
      .option('allow-http', { type: 'boolean', default: false, describe: 'Allow an http:// URL (an emulator on this machine); the service itself takes https only' })
      .option('token-file', { type: 'string', describe: 'The secret token: read from FILE (first line) when it exists, else generated and written there (mode 0600); env WDS_WEBHOOK_TOKEN instead' })
      .option('dry-run', { type: 'boolean', default: false, describe: 'Send Dry-Run: 1 (validate, change nothing, write no token file)' })
      .option('report', { type: 'string', describe: 'Write what was registered (JSON, no secret) to FILE' }) as unknown as Argv<RegisterArgs>,
  handler: (argv) => withEnding(argv, 'webhook register', (ending) => register(argv, ending)),
}, {
  examples: [
    ['wds-files webhook register --url https://hooks.example.com/wds', 'all three member events; a new secret in a file of mode 0600, whose path is printed'],
    ['wds-files webhook register --url https://hooks.example.com/wds --events member_created --token-file /etc/wds/webhook.token', 'only new members, with the token kept in (or read from) that file'],
  ],
  exits: { 0: 'the setting was registered (with --dry-run: the service accepted it)', 1: 'the service refused it, or already holds 10 settings (nothing sent)' },
  env: [...CONNECTION_ENV, 'WDS_WEBHOOK_TOKEN'],
});

async function register(argv: RegisterArgs, ending: Ending): Promise<void> {
  const { MAX_WEBHOOK_SETTINGS, parseEvents, registerWebhook, resolveWebhookToken, webhookUrlProblem, WebhookRegisterUsageError } = await import('../../webhooks/register.js');
  const asUsage = async <T>(work: () => Promise<T> | T): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw error instanceof WebhookRegisterUsageError ? new UsageError(error.message) : error;
    }
  };
  const urlProblem = webhookUrlProblem(argv.url, argv['allow-http']);
  if (urlProblem) throw new UsageError(urlProblem);
  const events = await asUsage(() => parseEvents(argv.events));
  // A setting made in the embedded emulator would be gone when this command ends.
  if (!(argv['base-url'] ?? process.env.WDS_BASE_URL)) throw new UsageError('no --base-url or WDS_BASE_URL: name the service (or a running `wds-files emulator`) to register the webhook with');
  await ending.checkReport(argv['token-file'] !== undefined ? [{ path: argv['token-file'], folder: false, what: '--token-file' }] : []);
  const connection = await connect(argv);
  const record = ending.body;
  try {
    const result = await registerWebhook(connection.client, {
      url: argv.url, events, dryRun: argv['dry-run'],
      token: () => asUsage(() => resolveWebhookToken({ url: argv.url, tokenFile: argv['token-file'], dryRun: argv['dry-run'] })),
    });
    const { token } = result;
    const summary = {
      id: result.setting.id,
      url: result.setting.url,
      events: result.setting.events,
      dry_run: argv['dry-run'],
      // Under a key of its own: keys that name a token or secret are masked in every JSON line.
      verification: { source: token.source, ...(token.file !== undefined ? { file: token.file } : {}) },
      settings: result.before + (argv['dry-run'] ? 0 : 1),
    };
    Object.assign(record, summary);
    ending.print(summary, () => [
      `${argv['dry-run'] ? 'dry run: the service would register' : 'registered'} webhook setting ${summary.id}: ${summary.url} (${summary.events.join(', ')})`,
      token.source === 'environment' ? 'secret token: from WDS_WEBHOOK_TOKEN'
        : token.source === 'file' ? `secret token: from ${token.file}`
        : token.file !== undefined ? `secret token: generated and written to ${token.file} (mode 0600); give it to the receiver: wds-files webhook serve --token-file ${token.file}`
        : 'secret token: generated for the dry run; nothing was written',
      `${summary.settings} of ${MAX_WEBHOOK_SETTINGS} webhook settings in use`,
    ]);
    if (result.sameUrl.length) process.stderr.write(`wds-files: note: setting${result.sameUrl.length === 1 ? '' : 's'} ${result.sameUrl.join(', ')} already deliver${result.sameUrl.length === 1 ? 's' : ''} to this URL; each event now arrives once per setting\n`);
  } finally {
    await connection.close();
    const requests = requestCounts(connection.client.transport.counters);
    ending.counts = { sent: requests.sent, retries: requests.retries, rate_limited: requests.rate_limited };
  }
}

// ---- webhook reconcile ----

interface ReconcileArgs extends ConnectionArgs {
  inbox?: string;
  report?: string;
  companies?: string;
  company?: string;
}

export const webhookReconcileCommand = leafCommand<ReconcileArgs>({
  command: 'reconcile',
  describe: 'Compare the members the service lists with the last list seen, and store each change no delivery announced',
  builder: (y: Argv) =>
    withConnection(y)
      .option('inbox', { type: 'string', describe: 'The inbox folder (default $XDG_STATE_HOME/wds-files/webhooks)' })
      .option('report', { type: 'string', describe: 'Write the changes found and the events stored (JSON) to FILE' })
      .option('companies', { type: 'string', describe: 'Fleet mode, with --database: each company of the fleet\'s companies file, its list and events in the database' })
      .option('company', { type: 'string', describe: 'With --companies: only this company' }) as unknown as Argv<ReconcileArgs>,
  handler: (argv) => withEnding(argv, 'webhook reconcile', (ending) => reconcileCommand(argv, ending)),
}, {
  examples: [
    ['wds-files webhook reconcile', 'store the member events the service never delivered, marked reconciled'],
    ['wds-files webhook reconcile --inbox /var/lib/wds/webhooks --json', 'the inbox serve writes to, with a JSON summary'],
    ['wds-files webhook reconcile --database postgres://wds:PASSWORD@db:5432/wds --companies companies.yaml', 'fleet mode: every company, its on: pipelines queued'],
  ],
  exits: { 0: 'the list was compared (or, the first time, recorded as the baseline)', 1: 'the service, the inbox or the database could not be reached' },
  env: CONNECTION_ENV,
});

async function reconcileCommand(argv: ReconcileArgs, ending: Ending): Promise<void> {
  if (argv.companies !== undefined) return reconcileFleet(argv, ending);
  if (argv.company !== undefined) throw new UsageError('--company names a company of the fleet\'s companies file: give --companies and --database too');
  const [{ WebhookInbox, defaultInboxFolder }, { reconcile }] = await Promise.all([import('../../webhooks/inbox.js'), import('../../webhooks/reconcile.js')]);
  // The embedded emulator is a new company each run: a list compared with it says nothing.
  if (!(argv['base-url'] ?? process.env.WDS_BASE_URL)) throw new UsageError('no --base-url or WDS_BASE_URL: name the service whose members to reconcile');
  const folder = argv.inbox === undefined ? defaultInboxFolder() : resolve(argv.inbox);
  await ending.checkReport([{ path: folder, folder: true, what: 'the inbox' }]);
  const connection = await connect(argv);
  const inbox = await WebhookInbox.open(folder);
  try {
    const result = await reconcile(connection.client, inbox, { onWait: (line) => say(argv, line) });
    const summary = {
      inbox: folder,
      baseline: result.baseline,
      members: result.members,
      created: result.created.length,
      updated: result.updated.length,
      deleted: result.deleted.length,
      announced: result.announced,
      stored: result.stored.length,
      listed_at: result.listed_at,
      previous_listed_at: result.previous_listed_at,
    };
    Object.assign(ending.body, summary, { events: result.stored });
    ending.counts = { created: summary.created, updated: summary.updated, deleted: summary.deleted, announced: summary.announced, stored: summary.stored };
    ending.print(summary, () => result.baseline
      ? [`reconcile ${folder}: first list recorded (${result.members} members); nothing stored, as there is no earlier list to compare with`]
      : [
        `reconcile ${folder}: ${result.members} members; since ${result.previous_listed_at}: ${summary.created} created, ${summary.updated} updated, ${summary.deleted} deleted`,
        `${summary.announced} already announced by events in the inbox; ${summary.stored} stored now, marked reconciled`,
        ...result.stored.map((event) => `  ${event.event} ${event.codes.join(', ')} (${event.event_time})`),
      ]);
  } finally {
    await inbox.close();
    await connection.close();
  }
}

/**
 * Fleet mode: each company of the companies file (or the one `--company` names) reconciled into
 * the fleet's database (src/fleet/reconcile.ts), through the limit windows the fleet shares. A
 * company whose service fails is told and the others go on; the exit is then 1.
 */
async function reconcileFleet(argv: ReconcileArgs, ending: Ending): Promise<void> {
  if (!databaseUrl(argv)) throw new UsageError('--companies keeps each company\'s list and events in the fleet\'s PostgreSQL: give --database postgres://USER:PASSWORD@HOST:PORT/DB (or WDS_DATABASE_URL)');
  if (argv.inbox !== undefined) throw new UsageError('--inbox and --companies exclude each other: with --companies the events go to the database');
  if (argv['base-url'] !== undefined || argv['consumer-key'] !== undefined) throw new UsageError('--base-url and --consumer-key are not for --companies: each company\'s come from the companies file');
  const [{ openClient, readCompanies }, { CompanyEventStore }, { reconcileCompany }, { databaseWindowStores }, { clientFor }] = await Promise.all([
    import('./fleet.js'), import('../../fleet/webhook-events.js'), import('../../fleet/reconcile.js'), import('../../fleet/limit-windows.js'), import('../../pipeline-files/connection.js'),
  ]);
  let companies = await readCompanies(argv.companies!, 'the reconcile');
  if (argv.company !== undefined) {
    companies = companies.filter((company) => company.name === argv.company);
    if (!companies.length) throw new UsageError(`--company ${argv.company} is not in ${argv.companies}`);
  }
  const signal = stopSignal();
  const fleet = await openClient(argv, { log: (line) => say(argv, line) });
  const results: FleetReconcileResult[] = [];
  const failed: string[] = [];
  try {
    for (const company of companies) {
      if (signal.aborted) break;
      const store = new CompanyEventStore(fleet.db, fleet.boss, company, (line) => say(argv, line));
      const connection = await clientFor({ baseUrl: company.baseUrl, consumerKey: company.consumerKey, consumerSecret: company.consumerSecret }, {
        tokenCache: true, windowStores: databaseWindowStores(fleet.db), fail: (message) => new UsageError(`${company.name}: ${message}`),
      });
      try {
        results.push(await reconcileCompany(connection.client, fleet.db, store, { signal }));
      } catch (error) {
        if (signal.aborted) break;
        failed.push(company.name);
        process.stderr.write(`wds-files: ${company.name}: ${redact((error as Error).message)}\n`);
      } finally {
        await connection.close();
      }
    }
  } finally {
    await fleet.close();
  }
  const stored = results.reduce((n, r) => n + r.stored.length, 0);
  ending.counts = { companies: results.length, failed: failed.length, stored };
  Object.assign(ending.body, { database: fleet.db.place, companies: results.map((r) => ({ ...r, stored: r.stored.length })) });
  ending.print({ database: fleet.db.place, companies: results.length, failed: failed.length, stored }, () => results.map((r) => r.superseded
    ? `${r.company}: another reconcile kept a newer list meanwhile; nothing compared`
    : r.baseline
      ? `${r.company}: first list recorded (${r.members} members); nothing stored`
      : `${r.company}: ${r.members} members; since ${r.previous_listed_at}: ${r.created.length} created, ${r.updated.length} updated, ${r.deleted.length} deleted; ${r.announced} announced, ${r.stored.length} stored, marked reconciled`));
  if (failed.length) throw new Error(`${failed.length} of ${companies.length} companies could not be reconciled: ${failed.join(', ')}`);
}
