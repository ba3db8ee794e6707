/**
 * An export into a snapshot archive (DESIGN.md section 10), as the export run sees its target
 * (src/stages/export/target.ts): the snapshot opens, and its earlier files are placed, while the
 * service lists; files unchanged since the previous snapshot are linked from it; a snapshot
 * follows deletions; its `snapshot.json` is written as it finishes.
 */
import { onDisk, openSink, type ExportRecorder } from '../stages/export/record.js';
import type { DownloadJob } from '../stages/export/download.js';
import type { ExportTarget, OpenedSink } from '../stages/export/target.js';
import type { ExportSink } from '../sinks/sink.js';
import type { ManifestLine } from '../sinks/manifest.js';
import type { ExportSource } from '../sinks/source.js';
import { SnapshotBuild, type MaxDelete, type SnapshotInfo } from './build.js';

export class SnapshotTarget implements ExportTarget<SnapshotInfo> {
  private readonly opening: Promise<SnapshotBuild>;
  /** The snapshot, once open: every step after `open` has it. */
  private build!: SnapshotBuild;
  private readonly maxDelete: MaxDelete | undefined;

  /**
   * @param archive The archive, whose lock the caller holds.
   * @param opening The snapshot opened already (the caller then owns none of it), or none: it is opened now.
   * @param held Throws once the lock is another run's: the snapshot is then never completed.
   */
  constructor(
    private readonly archive: string,
    options: { pipeline: string; maxDelete?: MaxDelete; opening?: Promise<SnapshotBuild> },
    private readonly held: () => Promise<void>,
  ) {
    this.maxDelete = options.maxDelete;
    // A run that lists nothing leaves no new snapshot.
    this.opening = onDisk(archive, () => options.opening ?? SnapshotBuild.open(archive, options.pipeline));
    this.opening.catch(() => undefined); // awaited by `open`, or `abandon`; not an unhandled rejection meanwhile
  }

  async open(source: ExportSource): Promise<OpenedSink> {
    this.build = await this.opening;
    this.build.source = source;
    return openSink(this.build.dir, null, { readOnly: true, source });
  }

  earlyStart(): { reference: ReadonlyMap<string, ManifestLine>; eligible: boolean } {
    const { build } = this;
    return { reference: build.reference(), eligible: build.resumed === null && build.previous !== null && build.pathsUnique };
  }

  reference(): ReadonlyMap<string, ManifestLine> {
    return this.build.reference();
  }

  noteListing(previousListed: number, movedFrom?: ReadonlyMap<string, string>): void {
    this.build.noteListing(previousListed, movedFrom);
  }

  /** A snapshot follows deletions: a resumed one gives up what the service no longer lists. */
  async unlisted(gone: ManifestLine[], sink: ExportSink, notes: string[]): Promise<ManifestLine[]> {
    if (gone.length === 0) return [];
    await this.held();
    await onDisk(this.build.dir, () => sink.drop!(gone));
    notes.push(`${gone.length} file${gone.length === 1 ? '' : 's'} the interrupted run had placed in the snapshot, which the service lists no more, ${gone.length === 1 ? 'was' : 'were'} taken out of it`);
    return [];
  }

  /** Links the unchanged files once the folders made ahead are done, while the others download. */
  link(lines: Iterable<ManifestLine>, recorder: ExportRecorder, signal: AbortSignal, after: Promise<unknown>): Promise<ManifestLine[]> {
    const { build } = this;
    const how = (): string => `unchanged since snapshot ${build.previous}; ${build.copied ? 'copied' : 'hard-linked'} from it`;
    return onDisk(build.dir, () => build.linkUnchanged(lines, (line) => recorder.linked(line, how()), signal, after));
  }

  refetched(jobs: DownloadJob[]): string {
    this.build.noteRefetched(jobs.map((job) => job.file.key));
    const count = jobs.length;
    const some = jobs.slice(0, 5).map((job) => job.path).join(', ') + (count > 5 ? `, and ${count - 5} more` : '');
    return `${count} file${count === 1 ? '' : 's'} unchanged at the service ${count === 1 ? 'was' : 'were'} downloaded again (counted repaired), not linked from snapshot ${this.build.previous}: the copy there was missing or damaged (its size or change time not what the archive wrote, or found damaged by archive check --read-data): ${some}`;
  }

  async pause(sink: ExportSink, failed: number): Promise<SnapshotInfo> {
    const { build } = this;
    await onDisk(this.archive, () => sink.pause(build.noteLine));
    return onDisk(build.dir, () => build.pause(failed));
  }

  async finish(sink: ExportSink, failed: number): Promise<SnapshotInfo> {
    const { build } = this;
    await onDisk(this.archive, () => sink.finish(build.noteLine));
    await this.held();
    return onDisk(build.dir, () => build.finish(failed, this.maxDelete));
  }

  /**
   * The snapshot opened for the run goes, with what was downloaded into it, so that the archive is
   * left as it was. A `.partial` continued from an earlier run stays, with the files its manifest
   * lists, for the next run.
   */
  async abandon(downloaded: boolean): Promise<void> {
    await this.opening.then((build) => build.discard(downloaded), () => undefined);
  }

  async discard(): Promise<void> {
    await this.opening.then((build) => build.discard(), () => undefined);
  }

  notes(): string[] {
    const { build } = this;
    return [
      ...(build.copied ? ['this file system has no hard links: unchanged files were copied from the previous snapshot, and take their space again'] : []),
      ...(build.resumed ? [`continued the snapshot an interrupted run left (${build.resumed}.partial)`] : []),
    ];
  }
}
