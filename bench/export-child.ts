/**
 * One export of bench/export in a process of its own, so that its peak memory is ours alone:
 * runs `runExport` with the options given as JSON in argv[2] and prints one JSON line with the
 * wall time of the export (listing included), what arrived, and the peak RSS (VmHWM).
 */
import { readFileSync } from 'node:fs';
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
let atPeak = process.memoryUsage();
const sampler = setInterval(() => {
  const usage = process.memoryUsage();
  if (usage.rss > atPeak.rss) atPeak = usage;
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
const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
console.log(JSON.stringify({
  ms, files: counts.ok, failed: counts.failed, bytes: counts.bytes, relists: result.relists, peak_rss_kb: hwm ? Number(hwm[1]) : null,
  at_peak_mb: { rss: mb(atPeak.rss), heap_total: mb(atPeak.heapTotal), heap_used: mb(atPeak.heapUsed), external: mb(atPeak.external), array_buffers: mb(atPeak.arrayBuffers) },
}));
