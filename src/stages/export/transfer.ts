/**
 * The export's download stage: the files to fetch, from their signed URLs, over connections of
 * their own (the token is never sent to storage), with at most `concurrency` at once, each result
 * handed on as it comes. A stop cuts the requests under way at once.
 */
import type { Logger } from '../../client/options.js';
import type { RetryPolicy } from '../../client/retry.js';
import type { ExportSink } from '../../sinks/sink.js';
import type { UrlLister } from './list-urls.js';
import { tuneForExport } from '../../util/runtime.js';
import { ConnectionLanes, JobFeed, Slots, downloadFile, pool, type DownloadJob, type DownloadResult } from './download.js';
import {
  LANE_KEEP_ALIVE_MS, LARGE_BODY_CONCURRENCY, LARGE_FILE_CONNECTIONS, LargeFilePace, LatencyWindow, START_CONNECTIONS, allOf, type StartGate,
} from '../../util/pacing.js';

export interface DownloadStageOptions {
  concurrency: number;
  lister: Pick<UrlLister, 'refresh'>;
  sink: ExportSink;
  retry: RetryPolicy;
  /** Stops the downloads (see `pool` and `downloadFile`). */
  signal?: AbortSignal;
  /** Told of each request's answer, for the client's logger. */
  logger?: Logger;
  /** Told each time a download is tried again. */
  onRetry: () => void;
}

export class DownloadStage {
  private readonly lanes: ConnectionLanes;
  private readonly download: (job: DownloadJob, release: () => void, lane: number) => Promise<DownloadResult>;
  private readonly gate: StartGate;
  private readonly cutRequests = (): void => void this.lanes.destroy();

  constructor(private readonly options: DownloadStageOptions) {
    const { concurrency, lister, sink, retry, signal, logger, onRetry } = options;
    this.lanes = new ConnectionLanes(concurrency, { keepAliveTimeout: LANE_KEEP_ALIVE_MS });
    // A stop cuts the requests under way all at once (see ConnectionLanes.destroy).
    signal?.addEventListener('abort', this.cutRequests, { once: true });
    const largeBodies = new Slots(Math.min(concurrency, LARGE_BODY_CONCURRENCY));
    // A zip paces the downloads by the files waiting for it; a folder by the large bodies read.
    const pace = sink.starts ? undefined : new LargeFilePace(LARGE_FILE_CONNECTIONS);
    const window = new LatencyWindow(START_CONNECTIONS, concurrency);
    // Request lines for the client's logger: the path alone, since the query of a signed URL is its key.
    const onAnswer = logger && ((url: string, status: number, ms: number): void => logger.debug(`GET ${new URL(url).pathname} ${status} ${Math.round(ms)} ms`));
    const lanes = this.lanes;
    this.download = (job, release, lane) =>
      downloadFile(job, { dispatcher: lanes.lane(lane), lister, sink, retry, signal, onReceived: release, largeBodies, pace, window, onRetry, onAnswer });
    this.gate = allOf(window, ...[sink.starts, pace].filter((g): g is StartGate => g !== undefined));
  }

  /**
   * Downloads `jobs` (emptied as they start), or a feed's jobs as they are pushed, handing each
   * result to `onResult`; a fatal error stops the starts and is thrown once the rest ended.
   */
  run(jobs: DownloadJob[] | JobFeed<DownloadJob>, onResult: (result: DownloadResult) => Promise<void>): Promise<void> {
    if (Array.isArray(jobs) && jobs.length > 0) tuneForExport();
    return pool(jobs, this.options.concurrency, this.download, onResult, this.gate, this.options.signal);
  }

  /** A feed for `run`: the process is tuned for downloads when its first jobs come. */
  feed(): JobFeed<DownloadJob> {
    return new JobFeed(tuneForExport);
  }

  /** Closes the connections. */
  async close(): Promise<void> {
    this.options.signal?.removeEventListener('abort', this.cutRequests);
    await this.lanes.close();
  }
}
