/**
 * The asynchronous read (api-v1-legacy.md 4 operations 12-14, behaviour 11; wire-format.md, Legacy
 * v1.x): 12 starts a job and answers its `progress_id`, 13 tells its progress, 14 answers the
 * result, `headers` (with `member_kana`) and `records`, once it is done.
 *
 * Choices where both documents are silent:
 * - The job reads the data as it is when it is started; it waits 1 second of service time, then
 *   runs 2 seconds, so a client polling sees WAITING and RUNNING before OK.
 * - A progress id is a string of 16 hex digits. A result can be fetched again until 24 hours of
 *   service time after the start; after that its id is unknown (NG). A company keeps its newest
 *   100 reads.
 * - An unknown sheet id on 12 answers `{"data": {"progress_id": null, "status": "NG", "message"}}`
 *   with HTTP 200, as 13 and 14 do for an unknown progress id or another sheet.
 * - With dry-run, a finished 14 answers the header part only: `{"status": "OK", "data": {"headers"}}`.
 */
import { randomBytes } from 'node:crypto';
import type { Company } from '../../company.js';
import { legacyState, type AsyncRead } from './state.js';
import { findLegacySheet, sheetHeaders, sheetRecords } from './sheet-read.js';
import { noParameters, type LegacyContext, type LegacyHandler } from './context.js';

export const ASYNC_WAIT_MS = 1000;
export const ASYNC_RUN_MS = 2000;
const KEPT_MS = 24 * 3600_000;
const KEPT_READS = 100;

function statusOf(read: AsyncRead, now: number): 'WAITING' | 'RUNNING' | 'OK' {
  if (now >= read.doneAt) return 'OK';
  return now >= read.runAt ? 'RUNNING' : 'WAITING';
}

const MESSAGES = {
  WAITING: 'the sheet is waiting to be created',
  RUNNING: 'the sheet is being created',
  OK: 'the sheet is ready',
} as const;

export const presetSheet: LegacyHandler = (ctx) => {
  noParameters(ctx);
  const { company } = ctx;
  const sheet = findLegacySheet(company, ctx.params.sheet_id);
  if (!sheet) {
    return { body: { data: { progress_id: null, status: 'NG', message: `sheet ${ctx.params.sheet_id} does not exist` } } };
  }
  const reads = legacyState(company).asyncReads;
  const now = company.clock.now();
  const id = randomBytes(8).toString('hex');
  reads.set(id, {
    sheetId: sheet.id,
    requestedAt: now,
    runAt: now + ASYNC_WAIT_MS,
    doneAt: now + ASYNC_WAIT_MS + ASYNC_RUN_MS,
    headers: sheetHeaders(sheet, true),
    records: sheetRecords(company, sheet, true),
  });
  for (const key of [...reads.keys()].slice(0, Math.max(0, reads.size - KEPT_READS))) reads.delete(key);
  return { body: { data: { progress_id: id, status: 'WAITING' } } };
};

/** The read of a progress id for this sheet, or the NG answer (HTTP 200) that explains why not. */
function lookup(ctx: LegacyContext, company: Company): { read: AsyncRead; now: number } | { ng: unknown } {
  const reads = legacyState(company).asyncReads;
  const now = company.clock.now();
  const id = ctx.params.progress_id ?? '';
  const read = reads.get(id);
  if (read && now - read.requestedAt > KEPT_MS) reads.delete(id);
  const live = reads.get(id);
  if (!live) return { ng: { status: 'NG', message: `progress_id ${id} does not exist (unknown, or its result has expired)` } };
  if (String(live.sheetId) !== ctx.params.sheet_id) {
    return { ng: { status: 'NG', message: `progress_id ${id} was issued for sheet ${live.sheetId}, not sheet ${ctx.params.sheet_id}` } };
  }
  return { read: live, now };
}

export const asyncProgress: LegacyHandler = (ctx) => {
  noParameters(ctx);
  const found = lookup(ctx, ctx.company);
  if ('ng' in found) return { body: found.ng };
  const status = statusOf(found.read, found.now);
  return { body: { status, message: MESSAGES[status] } };
};

export const asyncResult: LegacyHandler = (ctx) => {
  noParameters(ctx);
  const found = lookup(ctx, ctx.company);
  if ('ng' in found) return { body: found.ng };
  const status = statusOf(found.read, found.now);
  if (status !== 'OK') return { body: { status, message: MESSAGES[status] } };
  const { headers, records } = found.read;
  return { body: { status: 'OK', data: ctx.dryRun ? { headers } : { headers, records } } };
};
