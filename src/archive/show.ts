/**
 * What `archive show` says a snapshot holds: its files, members, photos and attachments by file
 * part, from its manifest read in order a part at a time (issue 46). One member's files lie in
 * every part of that order (photos, then each sheet's field), so the members are told apart
 * through a sorted spill rather than a set of every code.
 */
import { openSnapshotManifest, type ArchiveStore } from './archive-store.js';
import type { SnapshotEntry } from './store.js';
import { SortedSpill } from '../util/sorted-spill.js';

export interface SnapshotSummary {
  files: number;
  members: number;
  photos: number;
  /** Attachments by file part: `sheet S, field F`. */
  attachments: Record<string, number>;
}

export async function summarizeSnapshot(store: ArchiveStore, snapshot: SnapshotEntry): Promise<SnapshotSummary> {
  const manifest = await openSnapshotManifest(store, snapshot);
  const codes = new SortedSpill<null>();
  try {
    let files = 0;
    let photos = 0;
    const parts = new Map<string, number>();
    let last: string | undefined;
    for await (const { line } of manifest.lines()) {
      files += 1;
      if (line.kind === 'photo') photos += 1;
      else {
        const part = `sheet ${line.sheet_id}, field ${line.custom_field_id}`;
        parts.set(part, (parts.get(part) ?? 0) + 1);
      }
      // A member's files within one part are next to each other: its code is added once a part.
      if (line.code !== last) await codes.add(line.code, null);
      last = line.code;
    }
    let members = 0;
    let previous: string | undefined;
    for await (const [code] of codes.sorted()) {
      if (code !== previous) members += 1;
      previous = code;
    }
    return { files, members, photos, attachments: Object.fromEntries(parts) };
  } finally {
    codes.close();
    await manifest.close();
  }
}
