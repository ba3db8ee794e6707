/**
 * Webhook settings (api-v2.md 2 Webhook setting, 4.4 Webhook settings, 6.4; wire-format.md):
 * list, register, update and delete. The writes answer synchronously with the setting
 * (wire-format.md, Common); a dry run validates fully, answers as if done and changes nothing.
 */
import { intParam, type RouteContext, type RouteHandler } from '../context.js';
import { jsonObject, refuseIfAny } from '../json-object.js';
import { notFound } from '../../http-error.js';
import type { WebhookSetting } from '../../model.js';
import { WEBHOOK_EVENTS, type WebhookEvent } from '../../../spec/events.js';
import { MAX_WEBHOOK_SETTINGS } from '../../../spec/limits.js';

/** Hosts that `allowHttpWebhooks` opens to plain http, for receivers on the test machine. */
const LOCAL_HOSTS = ['127.0.0.1', 'localhost'];
const EVENT_NAMES = WEBHOOK_EVENTS.join(', ');

interface Setting {
  url: string;
  events: WebhookEvent[];
  /** undefined when the body does not send it; null for no token (sent as null or ""). */
  secretToken: string | null | undefined;
}

function view(hook: WebhookSetting): Record<string, unknown> {
  return {
    id: hook.id,
    url: hook.url,
    events: [...hook.events],
    secret_token: hook.secret_token,
    created_at: hook.created_at,
    updated_at: hook.updated_at,
  };
}

/** url: required, must start with https:// (api-v2.md 2 Webhook setting). */
function checkUrl(url: unknown, allowHttp: boolean, problems: string[]): string {
  if (url === undefined) {
    problems.push('url is required');
    return '';
  }
  if (typeof url !== 'string') {
    problems.push('url must be a string');
    return '';
  }
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (parsed && url.startsWith('https://') && parsed.hostname) return url;
  if (parsed && allowHttp && url.startsWith('http://') && LOCAL_HOSTS.includes(parsed.hostname)) return url;
  problems.push(
    allowHttp
      ? `url must start with https:// (this emulator also allows http://127.0.0.1 and http://localhost), got "${url}"`
      : `url must be a valid address starting with https://, got "${url}"`,
  );
  return '';
}

/** events: required, one or more event names, no duplicates (api-v2.md 2 Webhook setting). */
function checkEvents(events: unknown, problems: string[]): WebhookEvent[] {
  if (events === undefined) {
    problems.push('events is required');
    return [];
  }
  if (!Array.isArray(events)) {
    problems.push(`events must be an array of event names (${EVENT_NAMES})`);
    return [];
  }
  if (!events.length) {
    problems.push(`events must hold at least one event name (${EVENT_NAMES})`);
    return [];
  }
  const found: WebhookEvent[] = [];
  for (const event of events) {
    const known = WEBHOOK_EVENTS.find((e) => e === event);
    if (!known) problems.push(`events: ${JSON.stringify(event)} is not an event name; use ${EVENT_NAMES}`);
    else if (found.includes(known)) problems.push(`events: "${known}" appears more than once`);
    else found.push(known);
  }
  return found;
}

function checkSecret(secret: unknown, problems: string[]): string | null | undefined {
  if (secret === undefined) return undefined;
  if (secret === null || secret === '') return null;
  if (typeof secret !== 'string') {
    problems.push('secret_token must be a string');
    return undefined;
  }
  return secret;
}

/** Reads a register or update body; 400 naming every problem, `earlier` ones first. */
function readSetting(ctx: RouteContext, earlier: string[] = []): Setting {
  const body = jsonObject(ctx.body);
  const problems = [...earlier];
  const url = checkUrl(body.url, ctx.company.settings.allowHttpWebhooks, problems);
  const events = checkEvents(body.events, problems);
  const secretToken = checkSecret(body.secret_token, problems);
  refuseIfAny(problems);
  return { url, events, secretToken };
}

function findWebhook(ctx: RouteContext): WebhookSetting {
  const id = intParam(ctx, 'webhook_id');
  const hook = ctx.company.data.webhooks.find((w) => w.id === id);
  if (!hook) throw notFound(`webhook setting ${id}`);
  return hook;
}

export const listWebhooks: RouteHandler = (ctx) => ({
  body: { webhook_data: [...ctx.company.data.webhooks].sort((a, b) => a.id - b.id).map(view) },
});

/**
 * Register. At most 10 settings exist (api-v2.md 4.4 Webhook settings, 6.4). A dry run answers the
 * setting it would create, with the id the next register would get; that id is not used up.
 */
export const registerWebhook: RouteHandler = (ctx) => {
  const { company } = ctx;
  const { data } = company;
  const full = data.webhooks.length >= MAX_WEBHOOK_SETTINGS
    ? [`at most ${MAX_WEBHOOK_SETTINGS} webhook settings can exist and ${data.webhooks.length} do; delete one first`]
    : [];
  const setting = readSetting(ctx, full);
  const now = company.now();
  const hook: WebhookSetting = {
    id: data.next_ids.webhook,
    url: setting.url,
    events: setting.events,
    secret_token: setting.secretToken ?? null,
    created_at: now,
    updated_at: now,
  };
  if (!ctx.dryRun) {
    data.next_ids.webhook += 1;
    data.webhooks.push(hook);
    company.changed();
  }
  return { body: view(hook) };
};

/**
 * Update: url and events required (api-v2.md 4.3). A secret_token left out keeps the current one;
 * null or "" removes it.
 */
export const updateWebhook: RouteHandler = (ctx) => {
  const { company } = ctx;
  const hook = findWebhook(ctx);
  const setting = readSetting(ctx);
  const updated: WebhookSetting = {
    ...hook,
    url: setting.url,
    events: setting.events,
    secret_token: setting.secretToken === undefined ? hook.secret_token : setting.secretToken,
    updated_at: company.now(),
  };
  if (ctx.dryRun) return { body: view(updated) };
  Object.assign(hook, updated);
  company.changed();
  return { body: view(hook) };
};

export const deleteWebhook: RouteHandler = (ctx) => {
  const { company } = ctx;
  const hook = findWebhook(ctx);
  if (!ctx.dryRun) {
    company.data.webhooks = company.data.webhooks.filter((w) => w !== hook);
    company.changed();
  }
  return { status: 204 };
};
