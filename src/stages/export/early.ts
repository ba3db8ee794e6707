/**
 * An archive run's downloads of changed files, started as each file part's listing comes in
 * rather than once the service has listed every part: a changed file keeps its path in the
 * previous snapshot, and no other part's listing can change that path. The plan then leaves out
 * the files started here.
 */
import type { DownloadJob, JobFeed } from './download.js';
import type { RemoteFile } from './list-urls.js';
import type { ManifestLine } from '../../sinks/manifest.js';

/** What the early downloads need once the snapshot and its downloads are ready. */
export interface EarlyStart {
  /** The downloads' feed, which the run ends once the plan's jobs are pushed. */
  feed: JobFeed<DownloadJob>;
  /** The earlier snapshots' lines by key (SnapshotBuild.reference). */
  reference: ReadonlyMap<string, ManifestLine>;
  /**
   * Whether files may start before the plan: only in a new snapshot (not a `.partial` continued,
   * whose files an earlier run may hold at other paths) with a previous one, whose files each
   * have a path of their own (two at one path, which snapshots merged after a deleted file's path
   * was given to another can hold, are left to the plan, which gives such a path out once).
   */
  eligible: boolean;
}

export class EarlyDownloads {
  /** Keys of the files started here: the plan leaves them out. */
  readonly started = new Set<string>();
  private waiting: Iterable<RemoteFile>[] = [];
  private start: EarlyStart | null = null;
  /** Set once `ready` found nothing may start early: later listings are left to the plan. */
  private off = false;

  /** Gives a listing's files: its changed files start now, or once `ready` is called. */
  offer(files: Iterable<RemoteFile>): void {
    if (this.start) this.push(files);
    else if (!this.off) this.waiting.push(files);
  }

  /** The snapshot and its downloads are ready: the files offered so far start. */
  ready(start: EarlyStart): void {
    this.start = start.eligible ? start : null;
    this.off = this.start === null;
    const waiting = this.waiting;
    this.waiting = [];
    if (this.start) for (const files of waiting) this.push(files);
  }

  private push(files: Iterable<RemoteFile>): void {
    const { reference, feed } = this.start!;
    const jobs: DownloadJob[] = [];
    for (const file of files) {
      const before = reference.get(file.key);
      if (!before || before.updated_at === file.updated_at) continue;
      jobs.push({ file, path: before.path });
      this.started.add(file.key);
    }
    feed.push(jobs);
  }
}
