/**
 * What the photo and the attachment import commands share, around their pipelines: the report
 * checked before the first request, the source opened, the progress view and the connection (its
 * waits shown on the view), the company's journal, the stop signal, and the summary.
 */
import { stat } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import type { WdsClient } from '../client/client.js';
import type { WindowOption } from '../client/options.js';
import type { ImportProgress } from '../pipelines/import-progress.js';
import { openSource } from '../sources/open-source.js';
import type { ImportSource } from '../sources/source.js';
import { ImportJournal } from '../stages/import/journal/journal.js';
import type { RunReport } from '../stages/report.js';
import { UsageError, connect, type ConnectionArgs } from './connection.js';
import { createImportProgress } from './import-progress.js';
import type { OutputArgs } from './output.js';
import { finishRun, withEnding } from './ending.js';
import type { Place } from './path-clash.js';
import { stopSignal } from './stop-signal.js';

export interface ImportCommandArgs extends ConnectionArgs, OutputArgs {
  source: string;
  'dry-run': boolean;
  emulator: boolean;
}

/** The options every import pipeline takes from the command. */
export interface CommonImportOptions {
  client: WdsClient;
  source: ImportSource;
  dryRun: boolean;
  signal: AbortSignal;
  journal?: ImportJournal;
  onProgress: (progress: ImportProgress) => void;
}

/** What every import pipeline answers. */
export interface ImportOutcome {
  report: RunReport;
  requests: { register: number; update: number; minimum: number; resubmitted: number };
  waitedMs: number;
  checkMs: number;
  firstRequestMs: number | null;
}

export function runImportCommand(label: string, argv: ImportCommandArgs, run: (common: CommonImportOptions) => Promise<ImportOutcome>): Promise<void> {
  return withEnding(argv, label, async (ending) => {
    ending.runsFiles();
    // The report is checked before the first request: one that cannot be written is found before
    // anything is sent, not after.
    await ending.checkReport(await sourcePlaces(argv.source));
    // A source that is not there, or of a kind no import reads, is a bad argument (exit 2): nothing was sent.
    const source = await openSource(resolve(argv.source)).catch(async (error: unknown) => {
      const there = await stat(argv.source).then(() => true, () => false);
      if (!there || /cannot import from this file/.test((error as Error).message)) throw new UsageError((error as Error).message);
      throw error;
    });
    // On a terminal the progress line shows the waits as a countdown; elsewhere each wait is a line.
    // The client's update window is known once connected.
    const known: { update?: WindowOption } = {};
    const progress = createImportProgress(label, { quiet: argv.quiet, json: argv.json, update: () => known.update });
    const connection = await connect(argv, {
      writes: { allowEmbedded: argv.emulator },
      onWait: (event) => progress.wait(event),
      quietWaits: progress.showsWaits,
    });
    const limits = connection.client.options.limits;
    known.update = limits ? limits.update : undefined;
    try {
      const result = await run({
        client: connection.client,
        source,
        dryRun: argv['dry-run'],
        signal: stopSignal(),
        // The company's import journal; the embedded emulator is a new company each run, so it has none.
        journal: connection.embedded ? undefined : await ImportJournal.of(connection.client.options.consumerKey, connection.journals),
        onProgress: (p) => progress.update(p),
      });
      progress.stop();
      const r = result.requests;
      const n = r.register + r.update;
      finishRun(result.report, { requests: r, waited_ms: result.waitedMs, check_ms: result.checkMs, first_request_ms: result.firstRequestMs }, [
        `${n} update request${n === 1 ? '' : 's'} (${r.register} register, ${r.update} update; the fewest possible: ${r.minimum})${r.resubmitted ? `; ${r.resubmitted} files sent again after their request ended NG for others` : ''}`,
        `waited ${(result.waitedMs / 1000).toFixed(1)} s on the service's limits`,
        // An empty folder or zip is no error, but a user who named the wrong one should see it.
        ...(result.report.itemCount === 0 && !result.report.interrupted ? [`${argv.source} holds no file to import`] : []),
        ...result.report.notes,
      ]);
    } finally {
      progress.stop();
      await connection.close();
    }
  });
}

/** The places an import reads: its folder (an export's, for its manifest.jsonl), or its file. */
async function sourcePlaces(source: string): Promise<Place[]> {
  const what = 'the import source';
  if (basename(source) === 'manifest.jsonl') return [{ path: dirname(source), folder: true, what }];
  const folder = await stat(source).then((info) => info.isDirectory(), () => false);
  return [{ path: source, folder, what }];
}
