/**
 * Webhook receiver benchmark: 10,000 deliveries of one code each from 20 concurrent senders on
 * loopback to the shipped CLI (`node dist/cli/main.js webhook serve`, built first with `npm run
 * build`), each stored and fsynced before its answer. Prints deliveries per second, the p50 and
 * p99 answer times, the receiver's peak RSS (wait4, bench/max-rss.ts) once it has stopped on
 * SIGINT, and how many deliveries answered 2xx are missing from the inbox (lost). Targets (issue
 * 44): p99 under 1 s, a tenth of the service's 10 s; at least 1,000 a second; none lost.
 *
 *   npx tsx bench/webhooks.ts
 *   npx tsx bench/webhooks.ts --deliveries 20000 --senders 50 --no-build
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { measure } from './max-rss.js';
import { CLI, ROOT, ensureBuilt } from './shipped-cli.js';
import { readInboxEvents } from '../src/webhooks/inbox.js';

const argValue = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const DELIVERIES = Number(argValue('deliveries') ?? 10_000);
const SENDERS = Number(argValue('senders') ?? 20);
const TOKEN = 'bench-webhook-secret-7c1e';

/** A port free a moment ago: the receiver is told it, since its log is read only once it has ended. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function main(): Promise<void> {
  const which = ensureBuilt(!process.argv.includes('--no-build'));
  const inbox = await mkdtemp(join(tmpdir(), 'wds-bench-webhooks-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let stop: (signal: NodeJS.Signals) => void = () => undefined;
  const measured = measure(process.execPath, [CLI, 'webhook', 'serve', '--port', String(port), '--inbox', inbox], {
    cwd: ROOT, env: { ...process.env, WDS_WEBHOOK_TOKEN: TOKEN }, onStart: (signal) => (stop = signal),
  });

  const pool = new Pool(url, { connections: SENDERS });
  // Ready once it answers at all (a GET is refused with 405).
  for (let tries = 0; ; tries += 1) {
    try {
      await (await pool.request({ path: '/', method: 'GET' })).body.text();
      break;
    } catch (error) {
      if (tries > 300) throw new Error(`the receiver did not start: ${(error as Error).message}`);
      await sleep(50);
    }
  }

  const times: number[] = [];
  const acked: string[] = [];
  const refused = new Map<string, number>();
  let next = 0;
  const started = performance.now();
  const sender = async (): Promise<void> => {
    while (next < DELIVERIES) {
      const code = `B${next++}`;
      const body = JSON.stringify({ event: 'member_updated', event_time: '2026-12-02 10:00:00', member_data: [{ code }] });
      const sent = performance.now();
      try {
        const res = await pool.request({ path: '/', method: 'POST', body, headers: { 'Content-Type': 'application/json', 'Service-Token': TOKEN, 'User-Agent': 'Service-Webhook' } });
        await res.body.text();
        times.push(performance.now() - sent);
        if (res.statusCode >= 200 && res.statusCode < 300) acked.push(code);
        else refused.set(String(res.statusCode), (refused.get(String(res.statusCode)) ?? 0) + 1);
      } catch (error) {
        refused.set((error as Error).message, (refused.get((error as Error).message) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: SENDERS }, sender));
  const elapsedMs = performance.now() - started;
  await pool.close();
  stop('SIGINT');
  const run = await measured;
  if (run.code !== 0) throw new Error(`the receiver ended with ${run.signal ? `signal ${run.signal}` : `exit code ${run.code}`}:\n${run.stderr.slice(-2000)}`);

  const stored = new Set<string>();
  for await (const event of readInboxEvents(inbox)) for (const code of event.codes) stored.add(code);
  const lost = acked.filter((code) => !stored.has(code)).length;
  await rm(inbox, { recursive: true, force: true });

  times.sort((a, b) => a - b);
  const rate = (DELIVERIES / elapsedMs) * 1000;
  const p50 = percentile(times, 50);
  const p99 = percentile(times, 99);
  console.log(`webhook serve (${which}): ${DELIVERIES} deliveries, ${SENDERS} concurrent senders, loopback, fsync on`);
  console.log(`  deliveries/s   ${rate.toFixed(0)}  (target >= 1000)`);
  console.log(`  answer p50     ${p50.toFixed(1)} ms`);
  console.log(`  answer p99     ${p99.toFixed(1)} ms  (target < 1000 ms)`);
  console.log(`  peak RSS       ${(run.maxRssKb / 1024).toFixed(0)} MiB`);
  console.log(`  receiver CPU   ${(run.userS + run.systemS).toFixed(1)} s (user ${run.userS.toFixed(1)}, system ${run.systemS.toFixed(1)}) over ${(run.ms / 1000).toFixed(1)} s, start and stop included`);
  console.log(`  answered 2xx   ${acked.length}; not 2xx ${DELIVERIES - acked.length}${refused.size ? ` (${[...refused].map(([why, n]) => `${why}: ${n}`).join(', ')})` : ''}`);
  console.log(`  lost           ${lost}  (answered 2xx, not in the inbox; target 0)`);
  const met = rate >= 1000 && p99 < 1000 && lost === 0 && acked.length === DELIVERIES;
  console.log(met ? 'targets met' : 'targets NOT met');
  process.exitCode = met ? 0 : 1;
}

await main();
