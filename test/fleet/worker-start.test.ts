/**
 * A fleet worker, and the fleet's webhook receiver, started while their PostgreSQL is down
 * (DESIGN.md sections 14 and 15): the real CLI as a child process waits, says so once with
 * host:port/database and never the password, and starts when the database comes up; SIGTERM
 * during the wait ends it at once with exit 0.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { finished, spawnCli, stderrMatching, type CliRun } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { usePostgres } from '../helpers/postgres.js';

const dir = tempDir('wds-fleet-start-');
writeFileSync(join(dir, 'archive.yaml'), 'name: archive\nfrom: { service: attachments }\nto: { archive: "s3://backups/${COMPANY}/attachments" }\n');
writeFileSync(join(dir, 'companies.yaml'), 'companies:\n  - name: acme\n    base_url: http://127.0.0.1:9\n    consumer_key: acme-key\n    consumer_secret: ${ACME_SECRET}\n    pipelines: [archive.yaml]\n');
const env = { ACME_SECRET: 'acme-consumer-secret-51c2' };
const OUT_OF_REACH = /PostgreSQL at 127\.0\.0\.1:(\d+)\/wds cannot be reached \([^)]*\); waiting for it/;

describe('fleet worker started while PostgreSQL is down', { timeout: 180_000 }, () => {
  const db = usePostgres({ stopped: true });

  /** SIGTERM to `child` once it says it waits for the database: it ends at once with exit 0. */
  const stopWhileWaiting = async (child: ReturnType<typeof spawnCli>): Promise<CliRun> => {
    const ended = finished(child);
    await stderrMatching(child, OUT_OF_REACH, 60_000);
    child.kill('SIGTERM');
    const run = await ended;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toContain('test-password');
    return run;
  };

  const worker = () => spawnCli(['fleet', 'worker', '--database', db.url, '--companies', join(dir, 'companies.yaml'), '--concurrency', '1'], env);

  it('waits, logging the outage once without the password, and starts once the database answers', async () => {
    const child = worker();
    const ended = finished(child);
    await stderrMatching(child, OUT_OF_REACH, 60_000);
    // Several attempts fail meanwhile (one every 2 s): the outage is still told once.
    await sleep(5_000);
    expect(child.exitCode, 'the worker is still waiting').toBeNull();
    await db.start();
    await stderrMatching(child, /worker \S+: 1 company, 0 scheduled pipelines/, 60_000);
    child.kill('SIGTERM');
    const run = await ended;
    expect(run.code, run.stderr).toBe(0);
    expect([...run.stderr.matchAll(new RegExp(OUT_OF_REACH, 'g'))].map((m) => m[1])).toEqual([String(db.port)]);
    expect(run.stderr).toMatch(/PostgreSQL at 127\.0\.0\.1:\d+\/wds answers again after \d+ s; going on/);
    expect(run.stderr).not.toContain('test-password');
    expect(run.stderr).not.toContain(env.ACME_SECRET);
  });

  it('ends with exit 0 when SIGTERM comes during the wait, having started nothing', async () => {
    await db.stop();
    const run = await stopWhileWaiting(worker());
    expect(run.stderr).toMatch(/stopped \(SIGTERM\) while waiting for the database; nothing was started/);
    expect(run.stderr).not.toMatch(/worker \S+: 1 company/);
  });

  it('webhook serve --database --companies waits as the worker does, then receives; SIGTERM during the wait exits 0', async () => {
    await db.stop();
    const serve = () => spawnCli(['webhook', 'serve', '--port', '0', '--database', db.url, '--companies', join(dir, 'companies.yaml')], { ...env, WDS_WEBHOOK_TOKEN: 'webhook-token-7f3e' });
    const early = await stopWhileWaiting(serve());
    expect(early.stderr).toMatch(/stopped \(SIGTERM\) while waiting for the database; nothing was received/);

    const child = serve();
    const ended = finished(child);
    await stderrMatching(child, OUT_OF_REACH, 60_000);
    await db.start();
    await stderrMatching(child, /receiving webhooks at \S+\/COMPANY for 1 company/, 60_000);
    child.kill('SIGTERM');
    const run = await ended;
    expect(run.code, run.stderr).toBe(0);
    expect([...run.stderr.matchAll(new RegExp(OUT_OF_REACH, 'g'))]).toHaveLength(1);
    for (const secret of ['test-password', env.ACME_SECRET, 'webhook-token-7f3e']) expect(run.stderr + run.stdout).not.toContain(secret);
  });
});
