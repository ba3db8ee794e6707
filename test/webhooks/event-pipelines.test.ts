/**
 * Pipelines started by member events, end to end: `webhook serve --pipelines pipelines/` as a
 * child process, registered with the emulator through `webhook register`, the emulator delivering
 * to it. The shipped photo drop-folder pipeline (`on: [member_created]`) keeps a photo whose
 * member does not exist yet, and sends it within 60 s of the member's registration.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KEY, SECRET, useEmulator } from '../helpers/emulator.js';
import { ROOT, connectionArgs, runCli } from '../helpers/cli-process.js';
import { inboxEvents, inboxFolder, startServe, TOKEN } from '../helpers/webhook-serve.js';
import { plain, writeFiles } from '../import/photo-helpers.js';

const emu = useEmulator({ allowHttpWebhooks: true });

/** The bound: the photo is sent within a minute of the member's registration. */
const WITHIN_MS = 60_000;

async function registerMembers(codes: string[]): Promise<void> {
  const answer = await emu().api('POST', '/members', { member_data: codes.map((code) => ({ code, name: `Member ${code}` })) });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect((await emu().waitTask(answer.body.task_id)).status).toBe('OK');
}

async function hasPhoto(code: string): Promise<boolean> {
  const state = (await emu().control('GET', '/state')) as { members: { code: string; photo: unknown }[] };
  return state.members.some((m) => m.code === code && m.photo !== null);
}

const names = (dir: string): string[] => {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
};

async function until(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('webhook serve --pipelines', () => {
  it('sends a photo waiting in the drop folder within 60 s of its member\'s registration, through on: [member_created]', async () => {
    const drop = mkdtempSync(join(tmpdir(), 'wds-dropbox-'));
    const photoFolder = join(drop, 'inbox');
    await writeFiles(photoFolder, { 'N0500.jpg': await plain(80, 60, 5).jpeg().toBuffer() });
    // Older than the drop folder's settle time, as a photo dropped a while before would be.
    const past = new Date(Date.now() - 60_000);
    await utimes(join(photoFolder, 'N0500.jpg'), past, past);

    const inbox = inboxFolder();
    const serve = await startServe(inbox, ['--pipelines', join(ROOT, 'pipelines'), '--status-port', '0'], {
      WDS_WEBHOOK_TOKEN: TOKEN, WDS_DROPBOX: drop, WDS_BASE_URL: emu().url, WDS_CONSUMER_KEY: KEY, WDS_CONSUMER_SECRET: SECRET,
    });
    const registered = await runCli(['webhook', 'register', '--url', `${serve.url}/`, '--allow-http', '--events', 'member_created', ...connectionArgs(emu())], { WDS_WEBHOOK_TOKEN: TOKEN });
    expect(registered.code, registered.stderr).toBe(0);

    // Another member's registration runs the pipeline before N0500 exists: its photo waits.
    await registerMembers(['N0499']);
    await until(() => /photo-dropbox: (ok|partial|failed)/.test(serve.stderr()), 120_000, 'the first run');
    expect(serve.stderr()).toMatch(/photo-dropbox: partial/);
    expect(names(photoFolder)).toEqual(['N0500.jpg']);
    expect(names(join(drop, 'refused'))).toEqual([]);
    expect(await hasPhoto('N0500')).toBe(false);

    const registeredAt = Date.now();
    await registerMembers(['N0500']);
    await until(() => hasPhoto('N0500'), WITHIN_MS, 'N0500\'s photo');
    const tookMs = Date.now() - registeredAt;
    expect(tookMs).toBeLessThan(WITHIN_MS);
    await until(() => names(join(drop, 'done')).includes('N0500.jpg'), 30_000, 'the move to done/');
    expect(names(photoFolder)).toEqual([]);

    const events = await inboxEvents(inbox);
    expect(events.filter((e) => e.source === 'delivery').map((e) => `${e.event} ${e.codes.join(',')}`)).toEqual(['member_created N0499', 'member_created N0500']);
    const metrics = await (await fetch(`${serve.statusUrl}/metrics`)).text();
    expect(metrics).toMatch(/wds_webhook_pipeline_runs_started_total\{pipeline="photo-dropbox"\} 2\b/);
    expect(metrics).toMatch(/wds_webhook_last_reconciliation_timestamp_seconds [1-9]/);

    serve.child.kill('SIGTERM');
    expect((await serve.ended).code).toBe(0);
    process.stderr.write(`webhook serve --pipelines: N0500's photo sent ${tookMs} ms after its registration\n`);
  }, 300_000);
});
