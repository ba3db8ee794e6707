/**
 * The export's plan stage: each listed file's path in the export, and what to do with it: keep a
 * file an earlier run left intact, link one unchanged since the previous snapshot, or download it.
 */
import type { RemoteFile } from './list-urls.js';
import type { DownloadJob } from './download.js';
import { exportDir, type ManifestLine } from '../sinks/manifest.js';
import { PathAllocator, safeName } from '../util/safe-name.js';
import { extensionOf } from '../spec/extensions.js';

/** What the plan decided for the files of a listing. */
export interface ExportPlan {
  /** Files to download, with their paths. */
  jobs: DownloadJob[];
  /** Manifest lines of files an earlier run left intact, with nothing to download. */
  kept: ManifestLine[];
  /** Files unchanged since the previous snapshot, with its line: linked from there. */
  link: { file: RemoteFile; line: ManifestLine }[];
}

/** The manifest line of a file downloaded to `path`. */
export function lineOf(file: RemoteFile, path: string, size: number, sha256: string): ManifestLine {
  return {
    kind: file.kind, code: file.code, sheet_id: file.sheet_id, custom_field_id: file.custom_field_id,
    record_index: file.record_index, file_name: file.file_name, path, size, sha256, updated_at: file.updated_at,
  };
}

/**
 * Decides each file's path, and which files an earlier run left intact (nothing to download). For
 * an archive, `previous` holds the previous snapshot's lines: a file unchanged since is linked from
 * there (`link`), a changed one keeps its path.
 */
export function planExport(listing: RemoteFile[], intact: ReadonlyMap<string, ManifestLine>, previous?: ReadonlyMap<string, ManifestLine>): ExportPlan {
  const intactPaths = previous ? new Set([...intact.values()].map((line) => line.path)) : undefined;
  const taken = intactPaths ? new Set(intactPaths) : undefined;
  const jobs: DownloadJob[] = [];
  // Files new to the target, whose paths are given out once every path in use is known.
  const fresh: DownloadJob[] = [];
  const kept: ManifestLine[] = [];
  const link: { file: RemoteFile; line: ManifestLine }[] = [];
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
    const before = previous?.get(file.key);
    if (before && !taken!.has(before.path)) {
      taken!.add(before.path);
      if (before.updated_at === file.updated_at) link.push({ file, line: before });
      else jobs.push({ file, path: before.path });
      continue;
    }
    const job = { file, path: '' };
    jobs.push(job);
    fresh.push(job);
  }
  // An archive run with no new file (most nightly runs) skips reserving its 20,000 paths.
  if (fresh.length > 0) {
    const paths = new PathAllocator();
    for (const line of intact.values()) paths.reserve(line.path);
    for (const line of previous?.values() ?? []) if (!intactPaths!.has(line.path)) paths.reserve(line.path);
    for (const job of fresh) {
      const { file } = job;
      const name = file.kind === 'photo' ? `${file.code}.${extensionOf(file.file_name) || 'jpg'}` : file.file_name;
      job.path = paths.allocate(exportDir(file, safeName), name);
    }
  }
  return { jobs, kept, link };
}
