/**
 * `archive check` of a bucket archive: every snapshot's snapshot.json and manifest readable, the
 * object each manifest line names there with its size (from one listing of data/, a request per
 * 1,000 objects), `latest` naming a complete snapshot, and with `readDataPercent` that share of
 * the objects downloaded and hashed, as restic's `--read-data-subset` does. An object named by
 * several snapshots is read once.
 */
import { createHash } from 'node:crypto';
import pLimit from 'p-limit';
import { LATEST_FILE, isAccepted } from '../store.js';
import { pick, type CheckResult } from '../check.js';
import type { ManifestLine } from '../../sinks/manifest.js';
import { dataName, type BucketStore } from './store.js';

/** Objects downloaded and hashed at once. */
const READS_AT_ONCE = 8;

export async function checkBucketArchive(store: BucketStore, options: { readDataPercent?: number } = {}): Promise<CheckResult> {
  const { snapshots, partial } = await store.listSnapshots();
  const data = await store.listData();
  const result: CheckResult = { snapshots: snapshots.length, files: 0, read: 0, partial, problems: [], change_times: false, damaged: [] };
  const problem = (snapshot: string, text: string, path?: string): void => {
    result.problems.push({ snapshot, ...(path ? { path } : {}), problem: text });
  };
  /** The lines naming each object found with its size: the ones whose bytes may be read. */
  const present = new Map<string, { snapshot: string; line: ManifestLine }[]>();
  for (const snapshot of snapshots) {
    if (!snapshot.doc) problem(snapshot.id, snapshot.problem ?? 'snapshot.json cannot be read');
    let manifest;
    try {
      manifest = await store.readManifest(snapshot);
    } catch (error) {
      problem(snapshot.id, (error as Error).message);
      continue;
    }
    for (const p of manifest.problems) problem(snapshot.id, `manifest.jsonl ${p}`);
    if (snapshot.doc && snapshot.doc.counts.files !== manifest.lines.size) {
      problem(snapshot.id, `snapshot.json counts ${snapshot.doc.counts.files} files, the manifest lists ${manifest.lines.size}`);
    }
    for (const line of manifest.lines.values()) {
      result.files += 1;
      const object = data.get(line.sha256);
      if (!object) problem(snapshot.id, `missing: no object ${dataName(line.sha256)}`, line.path);
      else if (object.size !== line.size) problem(snapshot.id, `object ${dataName(line.sha256)} is ${object.size} bytes, the manifest says ${line.size}`, line.path);
      else present.set(line.sha256, [...(present.get(line.sha256) ?? []), { snapshot: snapshot.id, line }]);
    }
  }
  const complete = snapshots.filter((s) => isAccepted(s.doc)).map((s) => s.id);
  const latest = await store.readLatest();
  if (latest === null) {
    if (complete.length) problem(LATEST_FILE, `missing, though ${complete.at(-1)} is complete`);
  } else if (!complete.includes(latest)) problem(LATEST_FILE, `names ${latest}, which is not a complete snapshot of ${store.where}`);
  else if (latest !== complete.at(-1)) problem(LATEST_FILE, `names ${latest}, but ${complete.at(-1)} is newer and complete`);
  if (options.readDataPercent) {
    const shas = [...present.keys()];
    const share = Math.min(shas.length, Math.ceil((shas.length * options.readDataPercent) / 100));
    const limit = pLimit(READS_AT_ONCE);
    await Promise.all(pick(shas, share).map((sha) => limit(async () => {
      result.read += 1;
      const bytes = await store.bucket.get(dataName(sha)).catch((error: unknown) => error as Error);
      const why = bytes instanceof Error ? `cannot be read: ${bytes.message}` : bytes === null ? `missing: no object ${dataName(sha)}`
        : createHash('sha256').update(bytes).digest('hex') !== sha ? `sha256 of object ${dataName(sha)} differs from the manifest` : null;
      if (why) for (const { snapshot, line } of present.get(sha)!) problem(snapshot, why, line.path);
    })));
  }
  return result;
}
