/**
 * `wds-files webhook ...`: receiving the service's member events (DESIGN.md section 15). Each
 * subcommand is its own leaf command below; the group only names them.
 */
import type { Argv, CommandModule } from 'yargs';
import { resolve } from 'node:path';
import { connect, say, withConnection, UsageError, type ConnectionArgs } from '../connection.js';
import { requestCounts, withEnding, type Ending } from '../ending.js';
import { CONNECTION_ENV, leafCommand } from '../help-text.js';

export const webhookCommand: CommandModule = {
  command: 'webhook',
  describe: 'Webhooks: register a setting, find the events never delivered',
  builder: (y: Argv) => y
    .command(webhookRegisterCommand)
    .command(webhookReconcileCommand)
    .demandCommand(1, 'name a webhook command'),
  handler: () => undefined,
};

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
}

export const webhookReconcileCommand = leafCommand<ReconcileArgs>({
  command: 'reconcile',
  describe: 'Compare the members the service lists with the last list seen, and store each change no delivery announced',
  builder: (y: Argv) =>
    withConnection(y)
      .option('inbox', { type: 'string', describe: 'The inbox folder (default $XDG_STATE_HOME/wds-files/webhooks)' })
      .option('report', { type: 'string', describe: 'Write the changes found and the events stored (JSON) to FILE' }) as unknown as Argv<ReconcileArgs>,
  handler: (argv) => withEnding(argv, 'webhook reconcile', (ending) => reconcileCommand(argv, ending)),
}, {
  examples: [
    ['wds-files webhook reconcile', 'store the member events the service never delivered, marked reconciled'],
    ['wds-files webhook reconcile --inbox /var/lib/wds/webhooks --json', 'the inbox serve writes to, with a JSON summary'],
  ],
  exits: { 0: 'the list was compared (or, the first time, recorded as the baseline)', 1: 'the service or the inbox could not be reached' },
  env: CONNECTION_ENV,
});

async function reconcileCommand(argv: ReconcileArgs, ending: Ending): Promise<void> {
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
