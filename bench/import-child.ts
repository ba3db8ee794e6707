/**
 * One import of bench/import in a process of its own, so that its peak memory is ours alone: runs
 * `runPhotoImport` or `runAttachmentImport` with the options given as JSON in argv[2] and prints
 * one JSON line with the wall time, the report's counts, the requests sent and the minimum, the
 * time spent checking (and converting), the time waited on limits, and the peak RSS (VmHWM; and
 * sampled every 50 ms, split between the checking phase and the sending phase).
 */
import { readFileSync } from 'node:fs';
import { WdsClient } from '../src/client/client.js';
import { tuneMemory } from '../src/util/runtime.js';
import { runPhotoImport } from '../src/pipelines/photo-import.js';
import { runAttachmentImport } from '../src/pipelines/attachment-import.js';
import { openSource } from '../src/sources/open-source.js';

interface ChildOptions {
  base_url: string;
  consumer_key: string;
  consumer_secret: string;
  source: string;
  /** The client's update window: one minute of the emulator's clock. */
  update_window_ms: number;
  /** Photos (the default) or attachments to one file part. */
  kind?: 'photos' | 'attachments';
  trimming?: boolean;
  sheet?: number;
  field?: number;
}

tuneMemory(); // as the CLI does
const options = JSON.parse(process.argv[2] ?? '{}') as ChildOptions;
const client = new WdsClient({
  baseUrl: options.base_url,
  consumerKey: options.consumer_key,
  consumerSecret: options.consumer_secret,
  stateFile: false,
  limits: { update: { limit: 5, windowMs: options.update_window_ms } },
});
const started = performance.now();
// RSS sampled through the run, to tell the checking phase (checkMs from the start) from sending.
const samples: [number, NodeJS.MemoryUsage][] = [];
const sampler = setInterval(() => samples.push([performance.now() - started, process.memoryUsage()]), 50);
const source = await openSource(options.source);
const result = options.kind === 'attachments'
  ? await runAttachmentImport({ client, source, sheet: options.sheet, field: options.field })
  : await runPhotoImport({ client, source, trimming: options.trimming ?? false });
const ms = performance.now() - started;
clearInterval(sampler);
const mb = (bytes: number): number => Math.round(bytes / 2 ** 20);
/** The largest sampled RSS of a phase, and what V8 held then: the rest is native memory (libvips, malloc). */
const peakOf = (from: number, to: number): { rss: number; heap_total: number; external: number; array_buffers: number } => {
  let peak: NodeJS.MemoryUsage | undefined;
  for (const [t, usage] of samples) if (t >= from && t < to && (!peak || usage.rss > peak.rss)) peak = usage;
  return { rss: mb(peak?.rss ?? 0), heap_total: mb(peak?.heapTotal ?? 0), external: mb(peak?.external ?? 0), array_buffers: mb(peak?.arrayBuffers ?? 0) };
};
const checkPeak = peakOf(0, result.checkMs);
const sendPeak = peakOf(result.checkMs, ms);
await client.close();
const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
console.log(JSON.stringify({
  ms,
  counts: result.report.counts,
  requests: result.requests,
  check_ms: result.checkMs,
  waited_ms: result.waitedMs,
  rate_limited: client.transport.counters.rateLimited,
  peak_rss_kb: hwm ? Number(hwm[1]) : null,
  peak_rss_check_mb: checkPeak.rss,
  peak_rss_send_mb: sendPeak.rss,
  at_peaks_mb: { check: checkPeak, send: sendPeak },
  problems: result.report.items.filter((i) => i.outcome !== 'ok' && i.outcome !== 'converted').slice(0, 5),
}));
