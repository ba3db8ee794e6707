/**
 * One export of bench/export in a process of its own, so that its peak memory is ours alone:
 * runs `runExport` with the options given as JSON in argv[2] and prints one JSON line with the
 * wall time of the export (listing included), what arrived, and the peak RSS (VmHWM).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { WdsClient } from '../src/client/client.js';
import { tuneMemory } from '../src/util/runtime.js';
import { runExport } from '../src/pipelines/export.js';

interface ChildOptions {
  base_url: string;
  consumer_key: string;
  consumer_secret: string;
  what: 'photos' | 'attachments';
  out: string;
  concurrency?: number;
}

tuneMemory(); // as the CLI does
const options = JSON.parse(process.argv[2] ?? '{}') as ChildOptions;
const client = new WdsClient({ baseUrl: options.base_url, consumerKey: options.consumer_key, consumerSecret: options.consumer_secret, stateFile: false });
// The token is fetched before the clock starts: a long-running user process has one already.
await client.faceImages.list({ updatedSince: '2999-01-01' });
const started = performance.now();
// What made up the largest RSS seen (sampled every 50 ms): V8's heap, or memory outside it.
// The RSS alone is cheap to read; the full breakdown (V8's heap statistics too) only at a new peak.
let atPeak = process.memoryUsage();
const sampler = setInterval(() => {
  if (process.memoryUsage.rss() > atPeak.rss) atPeak = process.memoryUsage();
}, 50);
const result = await runExport({ client, what: options.what, out: options.out, concurrency: options.concurrency });
const ms = performance.now() - started;
clearInterval(sampler);
const mb = (bytes: number): number => Math.round(bytes / 2 ** 20);
await client.close();
const counts = { ok: 0, failed: 0, bytes: 0 };
for (const item of result.report.items) {
  if (item.outcome === 'ok') {
    counts.ok += 1;
    counts.bytes += item.size ?? 0;
  } else if (item.outcome === 'failed') counts.failed += 1;
}
// CPU seconds by thread, read before exit. Node 20 names every thread "node", so they are named
// by their id's distance from the process's, which follows the order they started in: V8's
// platform workers first (t2-t5 on Node 20), then libuv's pool (t7-t10), then worker threads
// such as the hashing thread (t11).
const cpuByThread: Record<string, number> = {};
const ticks = 100; // USER_HZ
for (const task of readdirSync('/proc/self/task')) {
  try {
    const stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const key = task === String(process.pid) ? 'main' : `t${Number(task) - process.pid}`;
    cpuByThread[key] = (cpuByThread[key] ?? 0) + (Number(fields[11]) + Number(fields[12])) / ticks;
  } catch {
    // The thread ended while we read.
  }
}
const cpu = process.cpuUsage();
const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
console.log(JSON.stringify({
  ms, files: counts.ok, failed: counts.failed, bytes: counts.bytes, relists: result.relists,
  cpu_s: { user: cpu.user / 1e6, system: cpu.system / 1e6, ...Object.fromEntries(Object.entries(cpuByThread).map(([k, v]) => [k, Math.round(v * 100) / 100])) },
  peak_rss_kb: hwm ? Number(hwm[1]) : null,
  at_peak_mb: { rss: mb(atPeak.rss), heap_total: mb(atPeak.heapTotal), heap_used: mb(atPeak.heapUsed), external: mb(atPeak.external), array_buffers: mb(atPeak.arrayBuffers) },
}));
