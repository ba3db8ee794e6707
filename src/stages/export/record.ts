/**
 * The export's sink stage: the folder, zip or snapshot the files land in, its manifest, and each
 * file's outcome in the report and the progress. A sink's error is the disk's, and names the export.
 */
import { SinkError, type DownloadResult } from './download.js';
import type { RunReport } from '../report.js';
import { lineOf } from './plan.js';
import { FolderSink } from '../../sinks/folder.js';
import type { ExportSink } from '../../sinks/sink.js';
import { TargetError, TargetRefusedError } from '../../sinks/target-error.js';
import { MANIFEST_NAME, manifestKey, type ManifestLine } from '../../sinks/manifest.js';
import type { ExportSource } from '../../sinks/source.js';
import { fileLanded } from '../../util/runtime.js';

/** How far an export is, as `onProgress` sees it. */
export interface ExportProgress {
  /** Files listed. */
  total: number;
  /** Files downloaded so far. */
  done: number;
  /** Files an earlier run left intact, not downloaded again. */
  skipped: number;
  /** Files that failed after their retries. */
  failed: number;
  /** Downloads tried again so far (a file may count several times). */
  retries: number;
  /** Bytes downloaded so far. */
  bytes: number;
  /** Listings asked for again because download URLs expired (they are valid 15 minutes). */
  relists: number;
}

/** A sink's error (the disk's) becomes a TargetError naming the export; others stay as they are. */
export function asTargetError(out: string, error: unknown): unknown {
  return error instanceof SinkError ? new TargetError(out, error.cause, error.path) : error;
}

/** Runs a step of the sink: whatever it throws is the disk's, and names the export. */
export async function onDisk<T>(out: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof TargetRefusedError) throw error;
    const named = asTargetError(out, error);
    throw named instanceof TargetError ? named : new TargetError(out, error);
  }
}

/**
 * The sink for `out`, recording `source` in its manifest, with the files an earlier run left intact there; aborted if that check
 * fails. Opened once the listing is in: a run that cannot list touches nothing on disk (an earlier
 * export's manifest, or the temporary files of another run into the same folder).
 */
export async function openSink(
  out: string, zipModule: Promise<typeof import('../../sinks/zip.js')> | null, options: { readOnly?: boolean; source?: ExportSource } = {},
): Promise<{ sink: ExportSink; intact: ReadonlyMap<string, ManifestLine> }> {
  const ZipSink = zipModule ? (await zipModule).ZipSink : null;
  const sink = await onDisk<ExportSink>(out, () => (ZipSink ? ZipSink.create(out, options.source) : FolderSink.create(out, options)));
  try {
    return { sink, intact: await onDisk(out, () => sink.intactFromEarlierRun()) };
  } catch (error) {
    await sink.abort().catch(() => undefined);
    throw error;
  }
}

/** Records what becomes of each file: its manifest line in the sink, its outcome in the report, the progress. */
export class ExportRecorder {
  /** Files that changed on the service while the run went (their newer version was downloaded). */
  changed = 0;
  /** Files of the listing not reported yet: a stopped run did not reach them. */
  unreached: number;
  readonly progress: ExportProgress;

  constructor(
    private readonly sink: ExportSink,
    private readonly report: RunReport,
    total: number,
    private readonly onProgress?: (progress: ExportProgress) => void,
  ) {
    this.progress = { total, done: 0, skipped: 0, failed: 0, retries: 0, bytes: 0, relists: 0 };
    this.unreached = total;
  }

  /** The listing is in: `total` files, some of them maybe reported already (started early). */
  listed(total: number): void {
    this.unreached += total - this.progress.total;
    this.progress.total = total;
    this.tell();
  }

  /** Tells `onProgress` where the run is. */
  tell(): void {
    this.onProgress?.({ ...this.progress });
  }

  /** Files an earlier run left intact, kept: skipped (gone through once). */
  kept(lines: Iterable<ManifestLine>): void {
    for (const line of lines) {
      this.unreached -= 1;
      this.skipped(line, 'already exported: size and sha256 match the manifest');
    }
    this.tell();
  }

  /** A file placed from the previous snapshot (`how`): in the manifest, and skipped. */
  async linked(line: ManifestLine, how: string): Promise<void> {
    await this.inManifest(line);
    this.unreached -= 1;
    this.skipped(line, how);
    this.tell();
  }

  /** A download tried again. */
  retried(): void {
    this.progress.retries += 1;
    this.tell();
  }

  /** A download's end: a file landed goes in the manifest; a stopped one is not reported. */
  async downloaded(result: DownloadResult, relists: number): Promise<void> {
    const { file, job } = result;
    fileLanded();
    if (result.outcome === 'stopped') return;
    this.unreached -= 1;
    if (result.outcome === 'ok') {
      await this.inManifest(lineOf(file, job.path, result.size!, result.sha256!));
      if (result.changed) this.changed += 1;
      this.report.add({
        key: file.key, code: file.code, file_name: file.file_name, outcome: 'ok', path: job.path, size: result.size, sha256: result.sha256,
        ...(result.changed ? { reason: `changed on the service since it was first listed; the version of ${file.updated_at} was downloaded` } : {}),
      });
      this.progress.done += 1;
      this.progress.bytes += result.size!;
    } else {
      this.report.add({ key: file.key, code: file.code, file_name: file.file_name, outcome: result.outcome, reason: result.reason, path: job.path });
      if (result.outcome === 'failed') this.progress.failed += 1;
      else this.progress.skipped += 1;
    }
    this.progress.relists = relists;
    this.tell();
  }

  private skipped(line: ManifestLine, reason: string): void {
    // A skipped file is no problem: with no items kept, its item would be made only to be counted.
    if (!this.report.keepsItems) this.report.countSkipped();
    else this.report.add({ key: manifestKey(line), code: line.code, file_name: line.file_name, outcome: 'skipped', reason, path: line.path, size: line.size, sha256: line.sha256 });
    this.progress.skipped += 1;
  }

  private async inManifest(line: ManifestLine): Promise<void> {
    try {
      await this.sink.record(line);
    } catch (error) {
      throw new SinkError(MANIFEST_NAME, error);
    }
  }
}
