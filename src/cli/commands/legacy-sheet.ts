/**
 * `wds-files legacy sheet <SHEET_ID> --out FILE.csv|FILE.jsonl`: a whole sheet through the legacy
 * interface (src/pipelines/v1-sheet.ts), written atomically. The target and its lock are
 * checked before the first request; a stop leaves the file that was there, and no partial one.
 */
import { resolve } from 'node:path';
import { Preflight } from '../preflight.js';
import { currentEnding, requestCounts, withEnding, type ReportBody } from '../ending.js';
import { say } from '../connection.js';
import { formatBytes } from '../progress.js';
import { stopSignal, stoppedBy, exitCodeOf } from '../stop-signal.js';
import { downloadSheet } from '../../pipelines/v1-sheet.js';
import { sheetText, type SheetFormat } from '../../sinks/sheet-formats.js';
import { writeFileAtomically } from '../../sinks/atomic-file.js';
import { looksLikeSheetDownload } from '../../sinks/earlier-sheet.js';
import { versionAtLeast, type LegacyVersion } from '../../client/v1/operation-kinds.js';
import { LockLostError, type TargetLock } from '../../util/target-lock.js';
import type { LegacySheetArgs } from './legacy-args.js';

export async function runLegacySheet(argv: LegacySheetArgs, call: { sheetId: number; version: LegacyVersion; format: SheetFormat }): Promise<void> {
  // The report is checked first, and may not be the download it describes nor a file kept beside it.
  await withEnding(argv, 'legacy sheet', async (ending) => {
    await ending.checkReport([{ path: argv.out, folder: false, what: 'the download' }]);
    await downloadLocked(argv, call, ending.body);
  });
}

async function downloadLocked(argv: LegacySheetArgs, call: { sheetId: number; version: LegacyVersion; format: SheetFormat }, report: ReportBody): Promise<void> {
  Object.assign(report, { sheet_id: call.sheetId, version: call.version, out: resolve(argv.out), format: call.format, written: false });
  const preflight = new Preflight(argv);
  try {
    const lock = await preflight.fileTarget(argv.out, {
      force: argv.force ?? false,
      waitLock: argv['wait-lock'],
      replaceable: (path) => looksLikeSheetDownload(path, call.format).catch(() => false),
      refusal: `is a file that is not an earlier sheet download (${call.format === 'csv' ? 'a CSV beginning with a byte order mark' : 'JSON lines'}), and the download would replace it; name another file, or add --force to replace it`,
    });
    await download(argv, call, lock, report);
  } finally {
    await preflight.end();
  }
}

async function download(argv: LegacySheetArgs, call: { sheetId: number; version: LegacyVersion; format: SheetFormat }, lock: TargetLock, report: ReportBody): Promise<void> {
  const signal = stopSignal();
  const out = resolve(argv.out);
  const started = Date.now();
  // The client is loaded once the target is known to be fine.
  const { connectLegacy } = await import('./legacy-connection.js');
  const connection = await connectLegacy(argv, { version: call.version, signal });
  try {
    const sheet = await downloadSheet(connection.client, call.sheetId, {
      async: argv.async,
      asyncAvailable: versionAtLeast(call.version, 'v1.1'),
      signal,
      onFallback: (error) => say(argv, `sheet ${call.sheetId}: the direct read timed out (${error.message}); reading it asynchronously instead`),
      onPoll: (status, message) => say(argv, `sheet ${call.sheetId}: ${status}${message ? `: ${message}` : ''}`),
    });
    // The file is renamed over `out` only while the lock is still this run's.
    const bytes = await writeFileAtomically(out, sheetText(call.format, sheet.headers, sheet.records), { signal, beforeRename: () => lock.assertHeld() }).catch((error: unknown) => {
      if (stoppedBy(signal) || error instanceof LockLostError) throw error;
      throw new Error(`cannot write ${argv.out}: ${writeFailure(error)}; the file that was there is as it was`);
    });
    const seconds = (Date.now() - started) / 1000;
    const summary = { sheet_id: call.sheetId, out, format: call.format, records: sheet.records.length, bytes, read: sheet.via, seconds: Number(seconds.toFixed(1)) };
    Object.assign(report, { written: true, records: summary.records, bytes, read: sheet.via });
    const ending = currentEnding();
    ending.counts = { records: summary.records };
    ending.print(summary, () => [`sheet ${call.sheetId}: ${sheet.records.length} records written to ${out} (${formatBytes(bytes)}, ${sheet.via === 'async' ? 'asynchronous read' : 'direct read'}, ${seconds.toFixed(1)} s)`]);
  } catch (error) {
    const stopped = stoppedBy(signal);
    if (!stopped) throw error;
    Object.assign(report, { outcome: 'interrupted', interrupted: { signal: stopped } });
    process.stderr.write(`wds-files: interrupted: stopped by ${stopped}; nothing was written, ${argv.out} is as it was; run it again to download the sheet\n`);
    process.exitCode = exitCodeOf(stopped);
  } finally {
    report.requests = requestCounts(connection.client.transport.counters);
    await connection.close();
  }
}

/** Why a file could not be written, in words, with the system's code for a search. */
function writeFailure(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOSPC') return 'the disk is full (ENOSPC)';
  if (code === 'EDQUOT') return 'the disk quota is used up (EDQUOT)';
  if (code === 'EACCES' || code === 'EPERM') return `permission denied (${code})`;
  if (code === 'EROFS') return 'the file system is read-only (EROFS)';
  return (error as Error).message;
}
