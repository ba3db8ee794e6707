/**
 * `wds-files plan`: what a run would do, from the listing and the source, changing nothing. It
 * reads only (listings, the source's names and sizes, the target's manifest) and counts the
 * requests of each kind against the service's limits, and the time those limits alone impose.
 */
import { dirname } from 'node:path';
import type { WdsClient } from '../client/client.js';
import { REQUESTS_PER_HOUR, UPDATE_REQUESTS_PER_MINUTE } from '../spec/limits.js';
import { UrlLister, attachmentTargets, type ListTarget } from '../stages/export/list-urls.js';
import { realign } from '../stages/export/plan.js';
import type { ManifestLine } from '../sinks/manifest.js';
import { listSnapshots, partialDir, readLatest, snapshotDir } from '../archive/store.js';
import { ManifestIndex } from '../archive/manifest-index.js';
import type { ImportJournal } from '../stages/import/journal/journal.js';
import type { LoadedPipeline } from './load.js';
import { isBucketAddress, type S3Settings } from '../archive/bucket/address.js';

export interface PipelinePlan {
  pipeline: string;
  direction: 'export' | 'import';
  files: {
    /** Files listed at the service, or read from the source. */
    total: number;
    /** Export: files to download. Import: files to send. */
    transfer: number;
    /** Export: files already in the target (same file, same updated_at): linked or kept. Import: files skipped (the service holds them already). */
    kept: number;
    /** Import: files a run would refuse (the source's rules, names, members, type, size). */
    refused: number;
    /** Import: bytes to send. */
    bytes?: number;
  };
  requests: {
    /** Listing and reading requests (all requests count against 3,000 an hour). */
    read: number;
    /** Update requests (5 a minute), each followed by polling its task. */
    update: number;
    /** Downloads from the storage (pre-signed URLs). */
    storage: number;
  };
  /** The shortest time the limits allow for these requests, in seconds. */
  limit_seconds: number;
  notes: string[];
}

/** The time the limits impose: 5 update requests in any minute, 3,000 requests in any hour. */
export function limitSeconds(update: number, all: number): number {
  const updateWait = update > UPDATE_REQUESTS_PER_MINUTE ? Math.ceil(update / UPDATE_REQUESTS_PER_MINUTE - 1) * 60 : 0;
  const allWait = all > REQUESTS_PER_HOUR ? Math.ceil(all / REQUESTS_PER_HOUR - 1) * 3600 : 0;
  return Math.max(updateWait, allWait);
}

/**
 * What a run of the pipeline would do. An import's files are read and checked as its run checks
 * them, with the company's import `journal` when given (read, never written), so the counts are
 * the run's.
 */
export async function planPipeline(pipeline: LoadedPipeline, client: WdsClient, options: { journal?: ImportJournal } = {}): Promise<PipelinePlan> {
  const before = client.transport.counters.requests;
  const plan = 'service' in pipeline.from ? await planExport(pipeline, client) : await planImport(pipeline, client, options.journal);
  plan.requests.read += client.transport.counters.requests - before;
  plan.limit_seconds = limitSeconds(plan.requests.update, plan.requests.read + plan.requests.update * 2);
  return plan;
}

async function planExport(pipeline: LoadedPipeline, client: WdsClient): Promise<PipelinePlan> {
  const { from, to } = pipeline;
  if (!('service' in from)) throw new Error('not an export');
  const targets: ListTarget[] = from.service === 'photos'
    ? [{ id: 'photos', kind: 'photo' }]
    : await attachmentTargets(client, { sheets: from.sheets, field: from.field });
  const files = await new UrlLister(client, targets, pipeline.steps.list.since).listAll();
  const notes: string[] = [];
  // A file whose record moved (a record before it was deleted) is kept as a run keeps it.
  const held = await earlierLines(to, notes);
  let kept: number;
  try {
    const earlier = realign(files, held.lines).lines;
    kept = files.filter((f) => earlier.get(f.key)?.updated_at === f.updated_at).length;
  } finally {
    await held.close();
  }
  return {
    pipeline: pipeline.name,
    direction: 'export',
    files: { total: files.length, transfer: files.length - kept, kept, refused: 0 },
    requests: { read: 0, update: 0, storage: files.length - kept },
    limit_seconds: 0,
    notes,
  };
}

/** The lines a target holds, by key (kept on disk, not in memory), and how to let go of them. */
interface HeldLines {
  lines: ReadonlyMap<string, ManifestLine>;
  close(): Promise<void>;
}

const NONE: HeldLines = { lines: new Map(), close: async () => undefined };

/** An index of manifests, closed with the rest of what `release` lets go of. */
const indexed = (index: ManifestIndex, release: () => Promise<void> = async () => undefined): HeldLines => ({
  lines: index,
  close: async () => {
    index.close();
    await release();
  },
});

/**
 * What a bucket archive's latest snapshot holds: a run names those files again without a request.
 * A stopped run's objects spare only uploads, not downloads (each file is downloaded to be hashed).
 * Its manifest is downloaded to a temporary file and looked up there.
 */
async function bucketLines(address: string, s3: S3Settings | undefined, notes: string[]): Promise<HeldLines> {
  const { BucketStore } = await import('../archive/bucket/store.js');
  const store = BucketStore.open(address, s3);
  try {
    const latest = await store.readLatest();
    if (!latest) {
      notes.push(`${address} holds no complete snapshot yet: the first snapshot downloads every file`);
      return NONE;
    }
    notes.push(`files unchanged since snapshot ${latest} are named again without a request, not downloaded`);
    const file = await store.manifestFile(await store.readEntry(latest));
    return indexed(await ManifestIndex.read([dirname(file.file)]), file.release);
  } finally {
    store.close();
  }
}

/**
 * What the target already holds: the archive's latest snapshot, or a folder's manifest, or a
 * zip's; kept on disk, as a run keeps them: the plan of 200,000 files does not hold their lines.
 */
async function earlierLines(to: LoadedPipeline['to'], notes: string[]): Promise<HeldLines> {
  if ('archive' in to && isBucketAddress(to.archive)) return bucketLines(to.archive, to.s3, notes);
  if ('archive' in to) {
    const latest = await readLatest(to.archive).catch(() => null);
    // A stopped run's .partial is continued: what it holds is not downloaded again either.
    const { partial } = await listSnapshots(to.archive);
    const resumed = partial.at(-1);
    const dirs = [...(latest ? [snapshotDir(to.archive, latest)] : []), ...(resumed ? [partialDir(to.archive, resumed)] : [])];
    if (resumed) {
      const held = await ManifestIndex.read([partialDir(to.archive, resumed)]);
      notes.push(`the run continues ${resumed}.partial, which holds ${held.size} file${held.size === 1 ? '' : 's'} already`);
      held.close();
    }
    if (!latest && !resumed) notes.push(`${to.archive} holds no complete snapshot yet: the first snapshot downloads every file`);
    if (latest) notes.push(`files unchanged since snapshot ${latest} are hard-linked, not downloaded`);
    return indexed(await ManifestIndex.read(dirs));
  }
  if ('folder' in to) {
    const index = await ManifestIndex.read([to.folder]);
    if (index.size > 0) notes.push(`files already in ${to.folder} with the same date are kept (a run checks their size and sha256)`);
    return indexed(index);
  }
  // A stopped run's .partial, else the complete zip, is copied from: its entries are not downloaded again.
  if (!('zip' in to)) return NONE;
  const { EarlierZip } = await import('../sinks/zip-earlier-run.js');
  for (const path of [`${to.zip}.partial`, to.zip]) {
    const earlier = await EarlierZip.open(path);
    if (!earlier) continue;
    try {
      const intact = await earlier.intactInTemp();
      notes.push(`files ${path} holds with the same date are copied from it (each checked), not downloaded`);
      return { lines: intact.index, close: intact.close };
    } finally {
      earlier.close();
    }
  }
  return NONE;
}

async function planImport(pipeline: LoadedPipeline, client: WdsClient, journal?: ImportJournal): Promise<PipelinePlan> {
  const { from, to, steps } = pipeline;
  if ('service' in from || !('service' in to)) throw new Error('not an import');
  const notes: string[] = [];
  // Read as the run reads it (a drop folder's newest files left for later), and every file checked
  // as the run checks it, bytes and all: the counts are the run's, only no request is sent.
  const { openPipelineSource } = await import('./move.js');
  const source = await openPipelineSource(from, { make: false, log: (line) => notes.push(line) });
  const common = { client, source, concurrency: steps.check.concurrency, journal, checkOnly: true };
  const { report, requests } = to.service === 'photos'
    ? await import('../pipelines/photo-import.js').then(({ runPhotoImport }) => runPhotoImport({ ...common, mode: to.mode, trimming: steps.submit.trim, normalize: steps.normalize.convert }))
    : await import('../pipelines/attachment-import.js').then(({ runAttachmentImport }) => runAttachmentImport({ ...common, mode: to.mode, sheet: to.sheet, field: to.field }));
  try {
    const c = report.counts;
    let bytes = 0;
    const refusals: string[] = [];
    for (const item of report.items) {
      if (item.outcome === 'ok' || item.outcome === 'converted') bytes += item.size ?? 0;
      else if (item.outcome === 'invalid' || item.outcome === 'conflict') refusals.push(`${item.outcome}: ${item.path ?? item.file_name}: ${item.reason ?? item.outcome}`);
    }
    if (c.skipped) notes.push(`${c.skipped} file${c.skipped === 1 ? '' : 's'} skipped: the service already holds ${c.skipped === 1 ? 'it' : 'them'}, or ${c.skipped === 1 ? 'it is' : 'they are'} gone`);
    notes.push(...report.notes, `${requests.register} register and ${requests.update} update request${requests.update === 1 ? '' : 's'}`);
    notes.push(...refusals.slice(0, MAX_REFUSALS_SHOWN));
    if (refusals.length > MAX_REFUSALS_SHOWN) notes.push(`... and ${refusals.length - MAX_REFUSALS_SHOWN} more refused`);
    const transfer = c.ok + c.converted;
    const refused = c.invalid + c.conflict;
    return {
      pipeline: pipeline.name,
      direction: 'import',
      files: { total: transfer + refused + c.skipped, transfer, kept: c.skipped, refused, bytes },
      requests: { read: 0, update: requests.register + requests.update, storage: 0 },
      limit_seconds: 0,
      notes,
    };
  } finally {
    report.close();
  }
}

/** Refused files a plan names one by one; the rest are counted. */
const MAX_REFUSALS_SHOWN = 20;

/** The plan as lines for a person. */
export function planLines(plan: PipelinePlan): string[] {
  const f = plan.files;
  const r = plan.requests;
  const lines = plan.direction === 'export'
    ? [`${files(f.total)} listed: ${f.transfer} to download, ${f.kept} already in the target`]
    : [`${files(f.total)} in the source: ${f.transfer} to send (${(f.bytes ?? 0).toLocaleString('en-US')} bytes)${f.refused ? `, ${f.refused} refused` : ''}${f.kept ? `, ${f.kept} skipped` : ''}`];
  lines.push(
    `requests: ${r.read} to list and read, ${r.update} update request${r.update === 1 ? '' : 's'} (limit ${UPDATE_REQUESTS_PER_MINUTE} a minute) each with its task to poll, ${r.storage} downloads from the storage; all API requests count against ${REQUESTS_PER_HOUR.toLocaleString('en-US')} an hour`,
    `the limits alone impose ${formatSeconds(plan.limit_seconds)}`,
    ...plan.notes,
  );
  return lines;
}

const files = (n: number): string => `${n} file${n === 1 ? '' : 's'}`;
const formatSeconds = (s: number): string => (s === 0 ? 'no wait' : s < 3600 ? `at least ${Math.round(s / 60)} min` : `at least ${(s / 3600).toFixed(1)} h`);
