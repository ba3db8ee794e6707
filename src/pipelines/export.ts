/**
 * The export pipelines (issue 4): list URLs, plan paths (skipping files an earlier run left
 * intact), download with bounded concurrency into a folder or a zip, write the manifest, report.
 */
import { Agent } from 'undici';
import type { WdsClient } from '../client/client.js';
import { UrlLister, attachmentTargets, type ListTarget, type RemoteFile } from '../stages/list-urls.js';
import { Slots, downloadFile, pool, type DownloadJob, type DownloadResult } from '../stages/download.js';
import { RunReport } from '../stages/report.js';
import { FolderSink } from '../sinks/folder.js';
import type { ExportSink } from '../sinks/sink.js';
import { exportDir, manifestKey, type ManifestLine } from '../sinks/manifest.js';
import { PathAllocator, safeName } from '../util/safe-name.js';
import { extensionOf } from '../spec/extensions.js';
import { DEFAULT_RETRY, type RetryPolicy } from '../client/retry.js';

/**
 * Chosen with `npx tsx bench/export.ts --sweep` (storage latency 20 ms, folder, 3 runs, medians;
 * 2-core machine shared with the emulator), 2026-11-21:
 *
 *   concurrency                8      16      32      64
 *   2,000 photos of 100 KB  6.18 s  3.48 s  2.55 s  2.30 s   peak RSS 110-111 MB throughout
 *   200 files of 5 MB        548     495     519     455 MB/s, peak RSS 129 / 145 / 154 / 206 MB
 *
 * 16 holds both targets of issue 4 on photos (twice as fast as `aria2c -j16`, no slower than
 * `curl -Z` at 16) and keeps large files under the memory bound. More connections are faster on
 * many small files; `largeBodies` (below) keeps a higher setting from costing memory on large ones
 * (64 connections on the 5 MB set: 160-165 MB with it, 202-226 MB without).
 */
export const DEFAULT_EXPORT_CONCURRENCY = 16;

/** Bodies over 1 MB read at once, whatever the concurrency (`largeBodies` in stages/download.ts). */
export const LARGE_BODY_CONCURRENCY = 8;

export interface ExportProgress {
  total: number;
  done: number;
  skipped: number;
  failed: number;
  bytes: number;
  relists: number;
}

export interface ExportOptions {
  client: WdsClient;
  what: 'photos' | 'attachments';
  /** A folder, or a file ending in `.zip`. */
  out: string;
  /** Only files updated on or after this date (`YYYY-MM-DD`). */
  since?: string;
  /** Attachments: one sheet, and optionally one file part of it. */
  sheet?: number;
  field?: number;
  /** Downloads in flight at once. Default 16. */
  concurrency?: number;
  retry?: Partial<RetryPolicy>;
  onProgress?: (progress: ExportProgress) => void;
  signal?: AbortSignal;
}

export interface ExportResult {
  report: RunReport;
  relists: number;
  changed: number;
  out: string;
}

export const isZipTarget = (out: string): boolean => out.toLowerCase().endsWith('.zip');

function lineOf(file: RemoteFile, path: string, size: number, sha256: string): ManifestLine {
  return {
    kind: file.kind, code: file.code, sheet_id: file.sheet_id, custom_field_id: file.custom_field_id,
    record_index: file.record_index, file_name: file.file_name, path, size, sha256, updated_at: file.updated_at,
  };
}

/** Decides each file's path, and which files an earlier run left intact (nothing to download). */
function plan(listing: RemoteFile[], intact: Map<string, ManifestLine>): { jobs: DownloadJob[]; kept: ManifestLine[] } {
  const paths = new PathAllocator();
  for (const line of intact.values()) paths.reserve(line.path);
  const jobs: DownloadJob[] = [];
  const kept: ManifestLine[] = [];
  for (const file of listing) {
    const earlier = intact.get(file.key);
    if (earlier && earlier.updated_at === file.updated_at) {
      kept.push(earlier);
      continue;
    }
    if (earlier) {
      jobs.push({ file, path: earlier.path });
      continue;
    }
    const dir = exportDir(file, safeName);
    const name = file.kind === 'photo' ? `${file.code}.${extensionOf(file.file_name) || 'jpg'}` : file.file_name;
    jobs.push({ file, path: paths.allocate(dir, name) });
  }
  return { jobs, kept };
}

export async function runExport(options: ExportOptions): Promise<ExportResult> {
  const { client } = options;
  const concurrency = options.concurrency ?? DEFAULT_EXPORT_CONCURRENCY;
  const report = new RunReport(`${options.what} export`);
  const targets: ListTarget[] = options.what === 'photos'
    ? [{ id: 'photos', kind: 'photo' }]
    : await attachmentTargets(client, { sheet: options.sheet, field: options.field });
  if (options.what === 'attachments' && targets.length === 0) {
    report.notes.push('no sheet has a file part');
  }
  const lister = new UrlLister(client, targets, options.since);
  const listing = await lister.listAll();
  // archiver and its dependencies are loaded only for a zip: a few MB of memory a folder export
  // does without (bench/export, peak memory).
  const sink: ExportSink = isZipTarget(options.out)
    ? await (await import('../sinks/zip.js')).ZipSink.create(options.out)
    : await FolderSink.create(options.out);
  // The token is never sent to storage: downloads go through their own pool, with no auth at all.
  const dispatcher = new Agent({ connections: concurrency, keepAliveTimeout: 30_000 });
  const progress: ExportProgress = { total: listing.length, done: 0, skipped: 0, failed: 0, bytes: 0, relists: 0 };
  let changed = 0;
  try {
    const { jobs, kept } = plan(listing, await sink.intactFromEarlierRun());
    for (const line of kept) {
      report.add({ key: manifestKey(line), code: line.code, file_name: line.file_name, outcome: 'skipped', reason: 'already exported: size and sha256 match the manifest', path: line.path, size: line.size, sha256: line.sha256 });
      progress.skipped += 1;
    }
    options.onProgress?.({ ...progress });
    const retry = { ...DEFAULT_RETRY, maxAttempts: 8, baseDelayMs: 100, maxDelayMs: 4_000, ...options.retry };
    const largeBodies = new Slots(Math.min(concurrency, LARGE_BODY_CONCURRENCY));
    const download = (job: DownloadJob, release: () => void): Promise<DownloadResult> =>
      downloadFile(job, { dispatcher, lister, sink, retry, signal: options.signal, onReceived: release, largeBodies });
    await pool(jobs, concurrency, download, async (result: DownloadResult) => {
      const { file, job } = result;
      if (result.outcome === 'ok') {
        await sink.record(lineOf(file, job.path, result.size!, result.sha256!));
        if (result.changed) changed += 1;
        report.add({
          key: file.key, code: file.code, file_name: file.file_name, outcome: 'ok', path: job.path, size: result.size, sha256: result.sha256,
          ...(result.changed ? { reason: `changed on the service since it was first listed; the version of ${file.updated_at} was downloaded` } : {}),
        });
        progress.done += 1;
        progress.bytes += result.size!;
      } else {
        report.add({ key: file.key, code: file.code, file_name: file.file_name, outcome: result.outcome, reason: result.reason, path: job.path });
        if (result.outcome === 'failed') progress.failed += 1;
        else progress.skipped += 1;
      }
      progress.relists = lister.relists;
      options.onProgress?.({ ...progress });
    });
    await sink.finish();
  } catch (error) {
    await sink.abort();
    throw error;
  } finally {
    await dispatcher.close();
  }
  report.finish();
  return { report, relists: lister.relists, changed, out: options.out };
}
