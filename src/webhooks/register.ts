/**
 * `webhook register`: one webhook setting through the API (api-v2.md 2 Webhook setting, 4.4
 * Webhook settings), with the secret token the receiver checks (DESIGN.md section 15). The token
 * comes from WDS_WEBHOOK_TOKEN or a token file; otherwise it is generated and written to a file
 * of mode 0600 before the setting is sent, so that a setting never exists whose secret nobody kept.
 * The secret itself is never printed: only the file's path is.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { WdsClient } from '../client/client.js';
import { ApiError } from '../client/errors.js';
import { WEBHOOK_EVENTS, type WebhookEvent } from '../spec/events.js';
import { MAX_WEBHOOK_SETTINGS } from '../spec/limits.js';
import type { Webhook } from '../spec/schemas.js';

export { MAX_WEBHOOK_SETTINGS };
import { registerSecret } from '../util/redact.js';
import { stateFolder } from '../util/xdg.js';

/** A request the user must change (a usage error at the CLI). */
export class WebhookRegisterUsageError extends Error {
  override readonly name = 'WebhookRegisterUsageError';
}

/** The service already holds the most settings it allows: nothing was sent. */
export class WebhookSettingsFullError extends Error {
  override readonly name = 'WebhookSettingsFullError';
  readonly code = 'WEBHOOK_SETTINGS_FULL';
}

/** A generated secret: 32 random bytes, as hex (64 characters, safe in a header). */
const GENERATED_BYTES = 32;

/**
 * The problem with a webhook URL, or null. https only (api-v2.md 2 Webhook setting), unless
 * `allowHttp`: for a receiver on the same machine or network during tests.
 */
export function webhookUrlProblem(url: string, allowHttp: boolean): string | null {
  const parsed = URL.canParse(url) ? new URL(url) : null;
  if (!parsed || !parsed.hostname) return `--url ${url} is not a web address; write it as https://host/path`;
  if (parsed.protocol === 'https:') return null;
  if (parsed.protocol === 'http:') {
    return allowHttp ? null : `--url ${url}: the service delivers webhooks to https:// addresses only; use https, or --allow-http for a receiver the service can reach over plain http (an emulator on this machine)`;
  }
  return `--url ${url}: a webhook address starts with https://`;
}

/** The events asked for, checked: names of api-v2.md section 6, none twice; all three when none are named. */
export function parseEvents(words: string[] | undefined): WebhookEvent[] {
  const names = (words ?? []).flatMap((word) => word.split(',')).map((word) => word.trim()).filter(Boolean);
  if (!names.length) return [...WEBHOOK_EVENTS];
  const events: WebhookEvent[] = [];
  for (const name of names) {
    const known = WEBHOOK_EVENTS.find((event) => event === name);
    if (!known) throw new WebhookRegisterUsageError(`--events: "${name}" is not an event; the events are ${WEBHOOK_EVENTS.join(', ')}`);
    if (events.includes(known)) throw new WebhookRegisterUsageError(`--events: ${known} is named twice`);
    events.push(known);
  }
  return events;
}

/** Where the secret came from, for the summary; never the secret itself. */
export type TokenSource = 'environment' | 'file' | 'generated';

export interface WebhookToken {
  secret: string;
  source: TokenSource;
  /** The token file read or written (none when it came from WDS_WEBHOOK_TOKEN, or a dry run generated it). */
  file?: string;
  /** Removes the file this run made, when the setting was refused for certain; the secret is then no one's. */
  discard: () => Promise<void>;
}

/** The default token file of a URL: one per address, under the user's state folder. */
export function defaultTokenFile(url: string): string {
  const host = new URL(url).hostname.replace(/[^A-Za-z0-9.-]/g, '_');
  const hash = createHash('sha256').update(url).digest('hex').slice(0, 8);
  return join(stateFolder(), 'webhook-tokens', `${host}-${hash}.token`);
}

/** The first line of a token file, as `webhook serve --token-file` reads it. */
async function readTokenFile(file: string): Promise<string> {
  const secret = (await readFile(file, 'utf8')).split(/\r?\n/, 1)[0]!;
  registerSecret(secret);
  if (!secret.trim()) throw new WebhookRegisterUsageError(`--token-file ${file}: its first line is empty; it should hold the webhook's secret token, or name a file that does not exist yet for one to be generated`);
  return secret;
}

/**
 * Makes the file with exclusive create, mode 0600 in a folder of mode 0700, and flushes it: a
 * file already there is never overwritten.
 */
async function writeNewTokenFile(file: string, secret: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const handle = await open(file, 'wx', 0o600);
  try {
    await handle.writeFile(`${secret}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * The secret for the setting: WDS_WEBHOOK_TOKEN; else the first line of `tokenFile` when it
 * exists; else a new one, written to `tokenFile` (or the default file of the URL, which must not
 * exist yet). A dry run writes nothing.
 */
export async function resolveWebhookToken(options: { url: string; tokenFile?: string; env?: NodeJS.ProcessEnv; dryRun?: boolean }): Promise<WebhookToken> {
  const env = options.env ?? process.env;
  const keep = async (): Promise<void> => undefined;
  const fromEnv = env.WDS_WEBHOOK_TOKEN;
  if (fromEnv !== undefined && options.tokenFile !== undefined) throw new WebhookRegisterUsageError('give WDS_WEBHOOK_TOKEN or --token-file, not both');
  if (fromEnv !== undefined) {
    registerSecret(fromEnv);
    if (!fromEnv.trim()) throw new WebhookRegisterUsageError('WDS_WEBHOOK_TOKEN is set but empty; unset it for a token to be generated');
    return { secret: fromEnv, source: 'environment', discard: keep };
  }
  const named = options.tokenFile;
  if (named !== undefined) {
    try {
      return { secret: await readTokenFile(named), source: 'file', file: named, discard: keep };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') {
        if (error instanceof WebhookRegisterUsageError) throw error;
        throw new WebhookRegisterUsageError(`--token-file ${named} cannot be read (${code ?? (error as Error).message})`);
      }
    }
  }
  const secret = randomBytes(GENERATED_BYTES).toString('hex');
  registerSecret(secret);
  if (options.dryRun) return { secret, source: 'generated', discard: keep };
  const file = named ?? defaultTokenFile(options.url);
  try {
    await writeNewTokenFile(file, secret);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // Only the default file can be there already: a named one that exists was read above.
    if (code === 'EEXIST') throw new WebhookRegisterUsageError(`${file} already exists (an earlier register for this URL?); pass --token-file ${file} to register with its token, or remove it for a new one`);
    throw new Error(`the token file ${file} cannot be written (${code ?? (error as Error).message}); nothing was registered`);
  }
  return { secret, source: 'generated', file, discard: () => unlink(file).catch(() => undefined) };
}

export interface RegisterResult {
  setting: Webhook;
  /** Settings that existed before, the new one not counted. */
  before: number;
  /** Earlier settings that deliver to the same URL (each event then arrives once per setting). */
  sameUrl: number[];
}

/**
 * Registers the setting unless the service already holds its most (checked first, so the
 * refusal is ours and clear rather than the service's, and no token file is made for nothing).
 * The token file made by this run is removed when the service refuses the setting; an answer
 * that never came leaves it, since the setting may exist.
 */
export async function registerWebhook(
  client: WdsClient, input: { url: string; events: WebhookEvent[]; token: () => Promise<WebhookToken>; dryRun?: boolean },
): Promise<RegisterResult & { token: WebhookToken }> {
  const existing = await client.webhooks.list();
  if (existing.length >= MAX_WEBHOOK_SETTINGS) {
    throw new WebhookSettingsFullError(`the service holds ${existing.length} webhook settings, the most it allows (${MAX_WEBHOOK_SETTINGS}); nothing was sent. Delete one first (wds-files api GET /webhook lists them, wds-files api DELETE /webhook/ID removes one)`);
  }
  const sameUrl = existing.filter((hook) => hook.url === input.url).map((hook) => hook.id);
  const token = await input.token();
  try {
    const setting = await client.webhooks.register({ url: input.url, events: input.events, secret_token: token.secret }, { dryRun: input.dryRun });
    return { setting, before: existing.length, sameUrl, token };
  } catch (error) {
    // A 4xx says the setting was not made; after a 5xx it may have been, and its secret must stay.
    if (error instanceof ApiError && (error.status ?? 500) < 500) await token.discard();
    throw error;
  }
}
