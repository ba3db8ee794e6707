/** The options and the result of an export (runExport, src/pipelines/export.ts; its run, export-run.ts). */
import type { WdsClient } from '../client/client.js';
import type { RunReport } from '../stages/report.js';
import type { ExportProgress } from '../stages/export/record.js';
import type { SnapshotBuild, SnapshotInfo } from '../archive/build.js';
import type { RetryPolicy } from '../client/retry.js';
import type { TargetLock } from '../util/target-lock.js';

/** Options of {@link runExport}. */
export interface ExportOptions {
  /** The client to list and download with. */
  client: WdsClient;
  /** Members' photos, or the files of sheets' file parts. */
  what: 'photos' | 'attachments';
  /** A folder, or a file ending in `.zip`. */
  out: string;
  /** Only files updated on or after this date (`YYYY-MM-DD`). Default: every file. */
  since?: string;
  /** Attachments: only this sheet. Default: every sheet with a file part. */
  sheet?: number;
  /** Attachments: only these sheets (instead of `sheet`). Default: every sheet with a file part. */
  sheets?: number[];
  /** Attachments: only this file part of the one sheet named. Default: every file part of the sheets. */
  field?: number;
  /** Downloads in flight at once. Default 64 for photos, 16 for attachments (`defaultConcurrency`). */
  concurrency?: number;
  /** How each download is retried. Defaults: 8 attempts, backoff from 100 ms up to 4 s, Retry-After waits up to 40 minutes. */
  retry?: Partial<RetryPolicy>;
  /**
   * Whether the report keeps each file's item (the default). With false it keeps the counts and
   * the first problems only (RunReport.countOnly): for a caller that writes no per-file report.
   */
  keepItems?: boolean;
  /** Called as files are listed, downloaded, skipped or fail. */
  onProgress?: (progress: ExportProgress) => void;
  /**
   * Stops the run (the CLI aborts it on SIGINT or SIGTERM, with the signal's name as the reason):
   * no download starts, those on their way are dropped with their temporary files, files already
   * received land, the output is left for a rerun to continue, and the result's report has
   * `interrupted` set.
   */
  signal?: AbortSignal;
  /**
   * Makes `out` a snapshot archive (a folder of `snapshots/<id>/`, each an export folder with its
   * `snapshot.json`, and `latest`): the run builds a new snapshot, hard-linking the files unchanged
   * since the previous one and downloading the rest. The caller holds the archive's lock
   * (`<out>/.wds-lock`). Cannot be combined with `since`: a snapshot holds every file.
   */
  archive?: {
    /** Recorded in `snapshot.json` as the pipeline that made the snapshot. */
    pipeline: string;
    /**
     * How many of the previous snapshot's files may be deleted (a count, or a share such as
     * `50%`, the default): a run that finds more holds its snapshot back, `latest` unmoved, and
     * its `snapshot.held` says why. `100%` allows any.
     */
    maxDelete?: import('../archive/build.js').MaxDelete;
    /** For an `out` of `s3://BUCKET/PREFIX` (DESIGN.md section 13): how to reach the bucket, where the AWS SDK's settings do not say. */
    s3?: import('../archive/bucket/address.js').S3Settings;
    /** For a bucket archive: S3 Object Lock on every object written (else the one the archive records). */
    objectLock?: import('../archive/bucket/address.js').ObjectLock;
    /**
     * @internal The snapshot, opened already (`SnapshotBuild.open` of `out`, under the lock the
     * caller holds, with `lock: false`), so that it started before this run's modules loaded. The
     * export then owns it: it finishes, pauses or discards it.
     */
    opening?: Promise<SnapshotBuild>;
  };
  /**
   * Whether the run takes its target's lock (DESIGN.md section 8): `FOLDER/.wds-lock`,
   * `NAME.zip.lock` beside a zip, or the archive's `.wds-lock`, held until the run ends. The
   * default, true: a target another run holds is refused at once with a `TargetLockedError` that
   * names it, and a target that is not an export is refused unless `force` (see there). False when
   * the caller holds the lock and has checked the target (the CLI does, before its first request).
   */
  lock?: boolean;
  /**
   * @internal The lock the caller holds on `out` (with `lock: false`). Another run that takes it
   * over stops this one: it ends with a `LockLostError`, without completing `out`, and leaves what
   * that run writes alone.
   */
  held?: TargetLock;
  /**
   * Writes into a folder of other files that is no export folder (it holds names and no
   * manifest.jsonl), or replaces a file named `*.zip` that is no export zip. Without it such a
   * target is refused with a RangeError before anything is written: the export could replace a
   * file of the caller's with one of the service's at the same path. Default false.
   */
  force?: boolean;
}

/** What an export did. */
export interface ExportResult {
  /** Each file's outcome (`ok`, `skipped`, `failed`) and why; `interrupted` when it was stopped. */
  report: RunReport;
  /** Listings asked for again because download URLs expired. */
  relists: number;
  /** Files that changed on the service while the export ran (the newer version was downloaded). */
  changed: number;
  /** The folder or zip written (the archive, for an archive run). */
  out: string;
  /** The snapshot an archive run made (or left as `.partial` when stopped). */
  snapshot?: SnapshotInfo;
}
