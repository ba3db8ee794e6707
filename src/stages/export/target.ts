/**
 * What an export writes into, beyond its sink: a folder or a zip is its sink alone; a snapshot of an
 * archive (src/archive/export-target.ts) also has the previous snapshot to link from and its own
 * description to finish. The export run (src/pipelines/export-run.ts) goes through this, so it
 * reads the same for every kind of target.
 */
import { onDisk, openSink, type ExportRecorder } from './record.js';
import type { DownloadJob } from './download.js';
import type { ExportSink } from '../../sinks/sink.js';
import type { ManifestLine } from '../../sinks/manifest.js';
import type { ExportSource } from '../../sinks/source.js';

/** A target's sink, opened, with what an earlier run left there intact. */
export interface OpenedSink {
  sink: ExportSink;
  /** By key; may be on disk (see ExportSink.intactFromEarlierRun). */
  intact: ReadonlyMap<string, ManifestLine>;
}

/** `Info` is what the target says of itself once paused or finished (a snapshot's SnapshotInfo). */
export interface ExportTarget<Info = never> {
  /** Opens the sink, recording `source` in its manifest. */
  open(source: ExportSource): Promise<OpenedSink>;
  /**
   * Given by a target whose sink opens while the service lists (rather than once the listing is
   * in), so that files changed since the previous snapshot start as their listing comes in
   * (EarlyDownloads): what they go by, once open: the earlier lines and whether any may start.
   */
  earlyStart?(): { reference: ReadonlyMap<string, ManifestLine>; eligible: boolean };
  /** The previous snapshot's lines by key, that unchanged files are linked from; null when there is none. */
  reference(): ReadonlyMap<string, ManifestLine> | null;
  /** What the service listed of the previous snapshot's files (planExport's `previousListed`) and which moved. */
  noteListing?(previousListed: number, movedFrom?: ReadonlyMap<string, string>): void;
  /**
   * The lines an earlier run left that the service lists no more: answers those the sink keeps
   * (a folder or a zip keeps them, as an export adds and refreshes), and takes out the others,
   * saying so in `notes`.
   */
  unlisted(gone: ManifestLine[], sink: ExportSink, notes: string[]): Promise<ManifestLine[]>;
  /**
   * Given by a target with a `reference`: places the unchanged files planExport links from it,
   * each recorded as it lands; answers the lines it could not. The lines are gone through once,
   * a part at a time.
   */
  link?(lines: Iterable<ManifestLine>, recorder: ExportRecorder, signal: AbortSignal, after: Promise<unknown>): Promise<ManifestLine[]>;
  /** With `link`: files it could not place, about to be downloaded: the report's note on them. */
  refetched?(jobs: DownloadJob[]): string;
  /** A stopped run: the output left for the next run to continue. */
  pause(sink: ExportSink, failed: number): Promise<Info | undefined>;
  /** The output completed; `failed` files that did not come. */
  finish(sink: ExportSink, failed: number): Promise<Info | undefined>;
  /**
   * The run ends before its plan (the listing failed, or it was stopped while the service listed):
   * what was made for it goes; `downloaded` when files had been started early into it.
   */
  abandon(downloaded: boolean): Promise<void>;
  /** A fatal error after the plan: what the run made goes, but not what a rerun continues from. */
  discard(): Promise<void>;
  /** What the report says of the target at the end. */
  notes(): string[];
}

/** An export folder or zip: its sink is all of it. */
export class SinkTarget implements ExportTarget {
  private readonly zipModule: Promise<typeof import('../../sinks/zip.js')> | null;

  constructor(private readonly out: string, zip: boolean) {
    // archiver and its dependencies are loaded only for a zip (a few MB of memory a folder export
    // does without), and while the service lists the files.
    this.zipModule = zip ? import('../../sinks/zip.js') : null;
    this.zipModule?.catch(() => undefined); // awaited in openSink; not an unhandled rejection meanwhile
  }

  open(source: ExportSource): Promise<OpenedSink> {
    return openSink(this.out, this.zipModule, { readOnly: false, source });
  }

  reference(): null {
    return null;
  }

  unlisted(gone: ManifestLine[]): Promise<ManifestLine[]> {
    return Promise.resolve(gone);
  }

  async pause(sink: ExportSink): Promise<undefined> {
    await onDisk(this.out, () => sink.pause());
    return undefined;
  }

  async finish(sink: ExportSink): Promise<undefined> {
    await onDisk(this.out, () => sink.finish());
    return undefined;
  }

  /** Nothing was made beside the sink, which the run ends. */
  abandon(): Promise<void> {
    return Promise.resolve();
  }

  /** Nothing was made beside the sink, which the run aborts. */
  discard(): Promise<void> {
    return Promise.resolve();
  }

  notes(): string[] {
    return [];
  }
}
