/**
 * The source a target records (src/sinks/source.ts), read before a run writes there: a folder's
 * manifest, a zip's manifest entry (or its stopped run's `.partial`), an archive's snapshots.
 */
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { MANIFEST_NAME, parseManifest } from '../sinks/manifest.js';
import { SourceMismatchError, sameSource, type ExportSource } from '../sinks/source.js';
import type { BucketOptions } from './archive-store.js';
import { isBucketAddress } from './bucket/address.js';
import type { BucketStore } from './bucket/store.js';
import { firstLine } from '../util/first-line.js';

export type TargetKind = 'folder' | 'zip' | 'archive';

/** A bucket archive's answer to `ask`, the store closed after; its module and the AWS SDK load only for an s3:// address. */
async function askBucket<T>(address: string, s3: BucketOptions, ask: (store: BucketStore) => Promise<T>): Promise<T> {
  const { BucketStore } = await import('./bucket/store.js');
  const store = BucketStore.open(address, s3);
  try {
    return await ask(store);
  } finally {
    store.close();
  }
}

/**
 * The source `out` records, or null when it records none (a new target, or one made before
 * sources were recorded). `s3` is how to reach an `s3://` archive.
 */
export async function recordedSource(out: string, kind: TargetKind, s3: BucketOptions = {}): Promise<ExportSource | null> {
  if (kind === 'archive' && isBucketAddress(out)) return askBucket(out, s3, (store) => store.recordedSource());
  const target = resolve(out);
  if (kind === 'archive') {
    const { archiveSource } = await import('./store.js');
    return archiveSource(target);
  }
  if (kind === 'folder') return parseManifest(await firstLine(join(target, MANIFEST_NAME))).source ?? null;
  const { EarlierZip } = await import('../sinks/zip-earlier-run.js');
  // A stopped run's `.partial` (or the zip it set aside) is continued by the next run: its source counts too.
  for (const path of [target, `${target}.partial`, `${target}.partial.prev`]) {
    const zip = await EarlierZip.open(path);
    if (!zip) continue;
    try {
      const source = await zip.source();
      if (source) return source;
    } finally {
      zip.close();
    }
  }
  return null;
}

/**
 * Refuses (SourceMismatchError, naming `shown` and both sources) a run from `source` into a target
 * that records another company's files. Answers the recorded source, null when there is none: a
 * target made before sources were recorded is adopted, and records this run's source from then on.
 */
export async function checkTargetSource(out: string, kind: TargetKind, source: ExportSource, shown = out, s3: BucketOptions = {}): Promise<ExportSource | null> {
  const recorded = await recordedSource(out, kind, s3);
  if (recorded && !sameSource(recorded, source)) throw new SourceMismatchError(shown, recorded, source);
  return recorded;
}

/**
 * What of an export `out` already holds, in words (`an export (its manifest.jsonl)`, `an export
 * zip`, `a snapshot archive`), or null when it is new: a run with no base URL writes the embedded
 * emulator's sample company only to a new target.
 */
export async function existingExport(out: string, kind: TargetKind, s3: BucketOptions = {}): Promise<string | null> {
  if (kind === 'archive' && isBucketAddress(out)) return (await askBucket(out, s3, (store) => store.holdsAnything())) ? 'a snapshot archive' : null;
  const target = resolve(out);
  if (kind === 'archive') {
    const { archiveHolding } = await import('./store.js');
    return (await archiveHolding(target)) === target ? 'a snapshot archive' : null;
  }
  if (kind === 'folder') return (await stat(join(target, MANIFEST_NAME)).catch(() => null)) ? `an export (its ${MANIFEST_NAME})` : null;
  for (const path of [target, `${target}.partial`]) {
    if (((await stat(path).catch(() => null))?.size ?? 0) > 0) return path === target ? 'an export zip' : `a stopped export (${path})`;
  }
  return null;
}
