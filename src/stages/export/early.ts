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

  /**
   * Marks the changed files of a part as started at once (the plan, made once every part is
   * listed, must know them all) and gives the feed their jobs as it takes them, read again from
   * the part's listing: made here as one array, a run where every file changed held each file
   * with its URL (600 MB of heap at 200,000 files).
   */
  private push(files: Iterable<RemoteFile>): void {
    const { reference, feed } = this.start!;
    const changed = (file: RemoteFile): ManifestLine | undefined => {
      const before = reference.get(file.key);
      return before && before.updated_at !== file.updated_at ? before : undefined;
    };
    let count = 0;
    for (const file of files) {
      if (!changed(file)) continue;
      this.started.add(file.key);
      count += 1;
    }
    if (count === 0) return;
    const started = this.started;
    feed.pushFrom((function* jobs(): Generator<DownloadJob> {
      let given = 0;
      for (const file of files) {
        const before = changed(file);
        if (!before || !started.has(file.key)) continue;
        yield { file, path: before.path };
        given += 1;
      }
      // A part's listing read again gives what it gave the first time; anything else would leave
      // started files neither downloaded nor planned. A listing closed because the run failed or
      // stopped (its length then 0) gives nothing more, and the run ends without those downloads.
      const closed = 'length' in files && files.length === 0;
      if (given !== count && !closed) throw new Error(`the listing of a file part gave ${given} changed files where it gave ${count} before`);
    })());
  }
}
