/**
 * `wds-files webhook serve` as a child process for the webhook tests: started on port 0 with its
 * own inbox folder and a token, its URL read from its first log line, and what it printed kept
 * for the checks that the token appears nowhere.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { readInboxEvents, type InboxEvent } from '../../src/webhooks/inbox.js';
import { spawnCli, stderrMatching } from './cli-process.js';

/** Long and random-looking, so that finding it anywhere means it leaked. */
export const TOKEN = 'whsec-9f2c41d7e8a64b0c93f1';

export interface Serve {
  child: ChildProcessWithoutNullStreams;
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** `http://127.0.0.1:PORT` of --status-port, when asked. */
  statusUrl: string | null;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code and signal once the child has ended. */
  ended: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const folders: string[] = [];
const children: ChildProcessWithoutNullStreams[] = [];

/** A folder for an inbox, removed after the test. */
export function inboxFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'wds-webhook-'));
  folders.push(dir);
  return dir;
}

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Starts `webhook serve --port 0 --inbox DIR ...args` with WDS_WEBHOOK_TOKEN set (unless `env` says otherwise). */
export async function startServe(inbox: string, args: string[] = [], env: NodeJS.ProcessEnv = { WDS_WEBHOOK_TOKEN: TOKEN }): Promise<Serve> {
  const child = spawnCli(['webhook', 'serve', '--port', '0', '--inbox', inbox, ...args], env);
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  const wantStatus = args.includes('--status-port');
  const started = await stderrMatching(child, wantStatus ? /status: (http:\/\/\S+)\/healthz/ : /receiving webhooks at (https?:\/\/[^/\s]+)/, 60_000);
  const url = /receiving webhooks at (https?:\/\/[^/\s]+)/.exec(started)![1]!;
  const statusUrl = wantStatus ? /status: (http:\/\/\S+)\/healthz/.exec(started)![1]! : null;
  return { child, url, statusUrl, stdout: () => stdout, stderr: () => stderr, ended };
}

/** Every event of the inbox, read as `webhook events` reads it. */
export async function inboxEvents(dir: string): Promise<InboxEvent[]> {
  const events: InboxEvent[] = [];
  for await (const event of readInboxEvents(dir)) events.push(event);
  return events;
}

/** The text of every file in the inbox folder (the events, the lock if one was left). */
export function inboxFilesText(dir: string): string {
  return readdirSync(dir).map((name) => readFileSync(join(dir, name), 'utf8')).join('\n');
}

/** A delivery's body as the service sends it (api-v2.md section 6). */
export const deliveryBody = (event: string, eventTime: string, codes: string[]): string =>
  JSON.stringify({ event, event_time: eventTime, member_data: codes.map((code) => ({ code })) });
