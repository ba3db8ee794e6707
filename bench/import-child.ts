/**
 * One import of bench/import in a process of its own, so that its peak memory is ours alone: runs
 * `runPhotoImport` or `runAttachmentImport` with the options given as JSON in argv[2] and prints
 * one JSON line with the wall time, the report's counts, the requests sent and the minimum, the
 * time spent checking (and converting), the time waited on limits, and the peak RSS (VmHWM; and
 * sampled every 50 ms, split between the checking phase and the sending phase). The photo import
 * checks in a child process of its own (src/stages/photo-checker.ts): its RSS is sampled with
 * ours and counted in the peaks, and its own peak (VmHWM, last read before it ended) is printed.
 */
import { readdirSync, readFileSync } from 'node:fs';
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
/** VmRSS and VmHWM of a process, in bytes; undefined once it has ended. */
function memoryOf(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return undefined;
  }
}
/** Our child processes (the photo checker), from /proc: Linux has no cheaper list of them. */
function children(): number[] {
  const mine: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid) mine.push(Number(name));
    } catch {
      // ended meanwhile
    }
  }
  return mine;
}
// RSS sampled through the run, to tell the checking phase (until the import says every file is
// checked: the photo checker has ended by then) from sending;
// with each sample, the RSS of our child processes then.
const samples: [number, NodeJS.MemoryUsage, number][] = [];
let known: number[] = [];
let childrenHwm = 0;
const sampler = setInterval(() => {
  let childRss = 0;
  let alive = known.map((pid) => [pid, memoryOf(pid)] as const).filter(([, m]) => m !== undefined);
  if (alive.length === 0) {
    known = children();
    alive = known.map((pid) => [pid, memoryOf(pid)] as const).filter(([, m]) => m !== undefined);
  }
  for (const [, m] of alive) {
    childRss += m!.rss;
    childrenHwm = Math.max(childrenHwm, m!.hwm);
  }
  samples.push([performance.now() - started, process.memoryUsage(), childRss]);
}, 50);
let checkedAt = Infinity;
const onProgress = (p: { stage: 'check' | 'send'; total?: number }): void => {
  if (p.stage === 'check' && p.total !== undefined) checkedAt = performance.now() - started;
};
const source = await openSource(options.source);
const result = options.kind === 'attachments'
  ? await runAttachmentImport({ client, source, sheet: options.sheet, field: options.field, onProgress })
  : await runPhotoImport({ client, source, trimming: options.trimming ?? false, onProgress });
const ms = performance.now() - started;
clearInterval(sampler);
const mb = (bytes: number): number => Math.round(bytes / 2 ** 20);
/**
 * The largest sampled RSS of a phase, ours and our children's together, and at that sample what
 * V8 held in this process: the rest is native memory (malloc, the loaded code) and the children.
 */
const peakOf = (from: number, to: number): { rss: number; ours: number; children: number; heap_total: number; external: number; array_buffers: number } => {
  let peak: [NodeJS.MemoryUsage, number] | undefined;
  for (const [t, usage, childRss] of samples) {
    if (t >= from && t < to && (!peak || usage.rss + childRss > peak[0].rss + peak[1])) peak = [usage, childRss];
  }
  const [usage, childRss] = peak ?? [undefined, 0];
  return {
    rss: mb((usage?.rss ?? 0) + childRss), ours: mb(usage?.rss ?? 0), children: mb(childRss),
    heap_total: mb(usage?.heapTotal ?? 0), external: mb(usage?.external ?? 0), array_buffers: mb(usage?.arrayBuffers ?? 0),
  };
};
const checkPeak = peakOf(0, checkedAt);
const sendPeak = peakOf(checkedAt, ms);
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
  children_peak_rss_kb: Math.round(childrenHwm / 1024),
  peak_rss_check_mb: checkPeak.rss,
  peak_rss_send_mb: sendPeak.rss,
  at_peaks_mb: { check: checkPeak, send: sendPeak },
  problems: result.report.items.filter((i) => i.outcome !== 'ok' && i.outcome !== 'converted').slice(0, 5),
}));
