/**
 * `wds-files plan`: what a run would do, from the listing and the source, changing nothing. It
 * reads only (listings, the source's names and sizes, the target's manifest) and counts the
 * requests of each kind against the service's limits, and the time those limits alone impose.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { WdsClient } from '../client/client.js';
import { MAX_ATTACHMENTS_PER_REQUEST, MAX_PHOTOS_PER_REQUEST, MAX_REQUEST_BYTES, REQUESTS_PER_HOUR, UPDATE_REQUESTS_PER_MINUTE, base64Length } from '../spec/limits.js';
import { UrlLister, attachmentTargets, type ListTarget } from '../stages/list-urls.js';
import { realign } from '../stages/export-plan.js';
import { MANIFEST_NAME, manifestKey, parseManifest, type ManifestLine } from '../sinks/manifest.js';
import { listSnapshots, partialDir, readLatest, readSnapshotManifest, snapshotDir } from '../archive/store.js';
import { openSource } from '../sources/open-source.js';
import type { LoadedPipeline } from './load.js';

export interface PipelinePlan {
  pipeline: string;
  direction: 'export' | 'import';
  files: {
    /** Files listed at the service, or read from the source. */
    total: number;
    /** Export: files to download. Import: files to send. */
    transfer: number;
    /** Export: files already in the target (same file, same updated_at): linked or kept. */
    kept: number;
    /** Import: files the source itself refuses (links, unsafe names). */
    refused: number;
    /** Import: bytes to send. */
    bytes?: number;
  };
  requests: {
    /** Listing and reading requests (all requests count against 3,000 an hour). */
    read: number;
    /** Update requests (5 a minute), each followed by polling its task. */
    update: number;
    /** Downloads from the storage (pre-signed URLs). */
    storage: number;
  };
  /** The shortest time the limits allow for these requests, in seconds. */
  limit_seconds: number;
  notes: string[];
}

/** The time the limits impose: 5 update requests in any minute, 3,000 requests in any hour. */
export function limitSeconds(update: number, all: number): number {
  const updateWait = update > UPDATE_REQUESTS_PER_MINUTE ? Math.ceil(update / UPDATE_REQUESTS_PER_MINUTE - 1) * 60 : 0;
  const allWait = all > REQUESTS_PER_HOUR ? Math.ceil(all / REQUESTS_PER_HOUR - 1) * 3600 : 0;
  return Math.max(updateWait, allWait);
}

export async function planPipeline(pipeline: LoadedPipeline, client: WdsClient): Promise<PipelinePlan> {
  const before = client.transport.counters.requests;
  const plan = 'service' in pipeline.from ? await planExport(pipeline, client) : await planImport(pipeline, client);
  plan.requests.read += client.transport.counters.requests - before;
  plan.limit_seconds = limitSeconds(plan.requests.update, plan.requests.read + plan.requests.update * 2);
  return plan;
}

async function planExport(pipeline: LoadedPipeline, client: WdsClient): Promise<PipelinePlan> {
  const { from, to } = pipeline;
  if (!('service' in from)) throw new Error('not an export');
  const targets: ListTarget[] = from.service === 'photos'
    ? [{ id: 'photos', kind: 'photo' }]
    : await attachmentTargets(client, { sheets: from.sheets, field: from.field });
  const files = await new UrlLister(client, targets, pipeline.steps.list.since).listAll();
  const notes: string[] = [];
  // A file whose record moved (a record before it was deleted) is kept as a run keeps it.
  const earlier = realign(files, await earlierLines(to, notes)).lines;
  const kept = files.filter((f) => earlier.get(f.key)?.updated_at === f.updated_at).length;
  return {
    pipeline: pipeline.name,
    direction: 'export',
    files: { total: files.length, transfer: files.length - kept, kept, refused: 0 },
    requests: { read: 0, update: 0, storage: files.length - kept },
    limit_seconds: 0,
    notes,
  };
}

/** What the target already holds: the archive's latest snapshot, or a folder's manifest. */
async function earlierLines(to: LoadedPipeline['to'], notes: string[]): Promise<Map<string, ManifestLine>> {
  if ('archive' in to) {
    const latest = await readLatest(to.archive).catch(() => null);
    // A stopped run's .partial is continued: what it holds is not downloaded again either.
    const { partial } = await listSnapshots(to.archive);
    const resumed = partial.at(-1);
    const held = resumed ? await readSnapshotManifest(partialDir(to.archive, resumed)).then((m) => m.lines, () => new Map<string, ManifestLine>()) : new Map<string, ManifestLine>();
    if (resumed) notes.push(`the run continues ${resumed}.partial, which holds ${held.size} file${held.size === 1 ? '' : 's'} already`);
    if (!latest) {
      if (!resumed) notes.push(`${to.archive} holds no complete snapshot yet: the first snapshot downloads every file`);
      return held;
    }
    notes.push(`files unchanged since snapshot ${latest} are hard-linked, not downloaded`);
    return new Map([...(await readSnapshotManifest(snapshotDir(to.archive, latest))).lines, ...held]);
  }
  if ('folder' in to) {
    const text = await readFile(join(to.folder, MANIFEST_NAME), 'utf8').catch(() => '');
    if (text) notes.push(`files already in ${to.folder} with the same date are kept (a run checks their size and sha256)`);
    return parseManifest(text).lines;
  }
  // A stopped run's .partial, else the complete zip, is copied from: its entries are not downloaded again.
  if (!('zip' in to)) return new Map();
  const { EarlierZip } = await import('../sinks/zip-earlier-run.js');
  for (const path of [`${to.zip}.partial`, to.zip]) {
    const earlier = await EarlierZip.open(path);
    if (!earlier) continue;
    try {
      const lines = await earlier.lines();
      notes.push(`files ${path} holds with the same date are copied from it (each checked), not downloaded`);
      return new Map(lines.map((line) => [manifestKey(line), line]));
    } finally {
      earlier.close();
    }
  }
  return new Map();
}

async function planImport(pipeline: LoadedPipeline, client: WdsClient): Promise<PipelinePlan> {
  const { from, to } = pipeline;
  if ('service' in from || !('service' in to)) throw new Error('not an import');
  const path = 'folder' in from ? from.folder : 'zip' in from ? from.zip : from.csv;
  // The route stage's own reading of a name; loaded here, as an export's plan never needs it.
  const { codeFromName } = await import('../stages/photo-route.js');
  const source = await openSource(path);
  const sizes: { code: string; size: number }[] = [];
  let refused = 0;
  try {
    // An export's files for the other kind of import, or another sheet or field, are not this run's.
    const want = to.service === 'photos' ? { kind: 'photo' as const } : { kind: 'attachment' as const, sheetId: to.sheet, fieldId: to.field };
    for await (const entry of source.entries(want)) {
      if (entry.kind === 'refused') refused += entry.refused.gone ? 0 : 1;
      else sizes.push({ code: entry.file.code ?? codeFromName(entry.file.relPath), size: entry.file.size });
    }
  } finally {
    await source.close();
  }
  const notes = [`files are checked when the run reads them: some of these may still be refused (type, size, member)`];
  const bytes = sizes.reduce((sum, f) => sum + f.size, 0);
  let update: number;
  if (to.service === 'photos') {
    const held = new Set((await client.faceImages.list()).map((p) => p.code));
    const mode = to.mode ?? 'upsert';
    const register = mode === 'update' ? [] : sizes.filter((f) => !held.has(f.code));
    const replace = mode === 'register' ? [] : sizes.filter((f) => held.has(f.code));
    update = requestsFor(register, MAX_PHOTOS_PER_REQUEST) + requestsFor(replace, MAX_PHOTOS_PER_REQUEST);
    notes.push(`${register.length} photos for members without one (register), ${replace.length} replacing a photo (update)`);
  } else {
    update = requestsFor(sizes, MAX_ATTACHMENTS_PER_REQUEST);
    notes.push('attachment requests are counted for adding; files that replace others go in requests of their own');
  }
  return {
    pipeline: pipeline.name,
    direction: 'import',
    files: { total: sizes.length + refused, transfer: sizes.length, kept: 0, refused, bytes },
    requests: { read: 0, update, storage: 0 },
    limit_seconds: 0,
    notes,
  };
}

/** Requests for these files: at most `perRequest` files and 250 MB of base64 in each. */
function requestsFor(files: { size: number }[], perRequest: number): number {
  if (!files.length) return 0;
  const encoded = files.reduce((sum, f) => sum + base64Length(f.size), 0);
  return Math.max(Math.ceil(files.length / perRequest), Math.ceil(encoded / MAX_REQUEST_BYTES));
}

/** The plan as lines for a person. */
export function planLines(plan: PipelinePlan): string[] {
  const f = plan.files;
  const r = plan.requests;
  const lines = plan.direction === 'export'
    ? [`${files(f.total)} listed: ${f.transfer} to download, ${f.kept} already in the target`]
    : [`${files(f.total)} in the source: ${f.transfer} to send (${(f.bytes ?? 0).toLocaleString('en-US')} bytes)${f.refused ? `, ${f.refused} refused by the source's rules` : ''}`];
  lines.push(
    `requests: ${r.read} to list and read, ${r.update} update request${r.update === 1 ? '' : 's'} (limit ${UPDATE_REQUESTS_PER_MINUTE} a minute) each with its task to poll, ${r.storage} downloads from the storage; all API requests count against ${REQUESTS_PER_HOUR.toLocaleString('en-US')} an hour`,
    `the limits alone impose ${formatSeconds(plan.limit_seconds)}`,
    ...plan.notes,
  );
  return lines;
}

const files = (n: number): string => `${n} file${n === 1 ? '' : 's'}`;
const formatSeconds = (s: number): string => (s === 0 ? 'no wait' : s < 3600 ? `at least ${Math.round(s / 60)} min` : `at least ${(s / 3600).toFixed(1)} h`);
