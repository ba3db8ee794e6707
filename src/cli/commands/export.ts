/**
 * `wds-files photos export` and `wds-files attachments export` (DESIGN.md section 3): thin
 * commands over the export pipeline.
 */
import { stat } from 'node:fs/promises';
import type { Argv } from 'yargs';
import { resolve } from 'node:path';
import { connect, withConnection, UsageError, type ConnectionArgs } from '../connection.js';
import { finishRun, withEnding, type Ending } from '../ending.js';
import type { OutputArgs } from '../output.js';
import { stopSignal } from '../stop-signal.js';
import { CONNECTION_ENV, leafCommand, type LeafHelp } from '../help-text.js';
import { withTargetOptions, type TargetArgs } from '../target-options.js';
import { followZipLink, isZipTarget } from '../../pipelines/export-defaults.js';
import { DEFAULT_EXPORT_CONCURRENCY, PHOTO_EXPORT_CONCURRENCY } from '../../util/pacing.js';
import { isValidDate } from '../../spec/time.js';
import type { TargetLock } from '../../util/target-lock.js';

interface ExportArgs extends ConnectionArgs, OutputArgs, TargetArgs {
  out: string;
  since?: string;
  concurrency?: number;
  sheet?: number;
  field?: number;
  emulator?: boolean;
}

function exportOptions<T>(yargs: Argv<T>, attachments: boolean): Argv<ExportArgs> {
  let y = withTargetOptions(withConnection(yargs))
    .option('out', { alias: 'o', type: 'string', demandOption: true, describe: 'A folder, or a file ending in .zip' })
    .option('since', { type: 'string', describe: 'Only files updated on or after YYYY-MM-DD' })
    .option('concurrency', {
      type: 'number',
      describe: attachments
        ? `Downloads at once (default ${DEFAULT_EXPORT_CONCURRENCY})`
        : `Downloads at once (default ${PHOTO_EXPORT_CONCURRENCY})`,
    })
    .option('report', { type: 'string', describe: 'Write the per-file report (JSON) to FILE' })
    .option('emulator', { type: 'boolean', default: false, describe: 'With no base URL, add the embedded emulator\'s sample company to an existing export all the same' });
  if (attachments) {
    y = y
      .option('sheet', { type: 'number', describe: 'Only this sheet id' })
      .option('field', { type: 'number', describe: 'Only this file part (custom field id); needs --sheet' });
  }
  return y.check((argv) => {
    if (argv.since !== undefined && !isValidDate(String(argv.since))) throw new UsageError(`--since must be a date YYYY-MM-DD, got "${argv.since}"`);
    if (argv.concurrency !== undefined && (!Number.isInteger(argv.concurrency) || (argv.concurrency as number) < 1 || (argv.concurrency as number) > 256)) {
      throw new UsageError(`--concurrency must be a whole number from 1 to 256, got ${argv.concurrency}`);
    }
    if (argv.field !== undefined && argv.sheet === undefined) throw new UsageError('--field needs --sheet');
    return true;
  }) as unknown as Argv<ExportArgs>;
}

async function handle(what: 'photos' | 'attachments', argv: ExportArgs, ending: Ending): Promise<void> {
  argv.out = await followZipLink(argv.out);
  // The report, the target and its lock, before the first request.
  const { Preflight } = await import('../preflight.js');
  const preflight = new Preflight(argv);
  try {
    await ending.checkReport([{ path: argv.out, folder: !isZipTarget(argv.out), what: 'the export' }]);
    const lock = await preflight.exportTarget(argv.out, { zip: isZipTarget(argv.out), force: argv.force ?? false, waitLock: argv['wait-lock'] });
    await refuseEmbeddedInto(argv);
    await exportWith(what, argv, lock);
  } finally {
    await preflight.end();
  }
}

/**
 * With no base URL an export goes to the embedded emulator's sample company: into a new target
 * that is a try, into an existing export it would mix the sample company's files with the real
 * ones. That needs --emulator, as an import does.
 */
async function refuseEmbeddedInto(argv: ExportArgs): Promise<void> {
  if (argv['base-url'] || process.env.WDS_BASE_URL || argv.emulator) return;
  const { existingExport } = await import('../../archive/target-source.js');
  const there = await existingExport(argv.out, isZipTarget(argv.out) ? 'zip' : 'folder');
  if (!there) return;
  throw new UsageError([
    `--out ${argv.out} holds ${there}, and there is no --base-url or WDS_BASE_URL: the export would add the embedded emulator's sample company to it.`,
    'Point it at the service with --base-url https://... (or WDS_BASE_URL) and the consumer key and secret, or name a new --out;',
    'to add the sample company all the same, add --emulator. Nothing was changed.',
  ].join('\n  '));
}

async function exportWith(what: 'photos' | 'attachments', argv: ExportArgs, lock: TargetLock): Promise<void> {
  // The export's stages, sinks and progress view are loaded when an export runs, not for --help.
  const [{ runExport }, { UnknownTargetError }, { createProgress }, { SourceMismatchError }] = await Promise.all([
    import('../../pipelines/export.js'), import('../../stages/export/list-urls.js'), import('../progress.js'), import('../../sinks/source.js'),
  ]);
  const connection = await connect(argv);
  const progress = createProgress(`${what} export`, argv);
  try {
    const result = await runExport({
      client: connection.client,
      what,
      out: resolve(argv.out),
      // Taken with the other checks of --out before the first request (preflight).
      lock: false,
      held: lock,
      since: argv.since,
      sheet: argv.sheet,
      field: argv.field,
      concurrency: argv.concurrency,
      signal: stopSignal(),
      keepItems: Boolean(argv.report),
      onProgress: (p) => progress.update({
        done: p.done + p.skipped + p.failed, total: p.total, bytes: p.bytes, failed: p.failed, retries: p.retries,
        note: p.relists ? `${p.relists} re-lists` : undefined,
      }),
      // Stopped once, before the summary: a plain progress view prints its last line on stop.
    }).catch((error: unknown) => {
      throw error instanceof UnknownTargetError || error instanceof SourceMismatchError ? new UsageError(error.message) : error;
    }).finally(() => progress.stop());
    // Stopped before the listing came in whole (its total unknown): the sink was never opened.
    const listingCut = result.report.interrupted !== null && result.report.interrupted.total === undefined;
    // A stopped zip export leaves its files in `NAME.zip.partial`; the zip named is not there yet (or is the earlier one).
    const stoppedZip = result.report.interrupted !== null && isZipTarget(result.out);
    const partialLeft = stoppedZip && (await stat(`${result.out}.partial`).then(() => true, () => false));
    const where = listingCut ? `stopped while the service listed: nothing written to ${result.out}`
      : partialLeft ? `written to ${result.out}.partial, which the next run into ${result.out} continues`
        : stoppedZip ? `stopped before its zip was complete: ${result.out} is as it was` : `written to ${result.out}`;
    const lines = [where, ...result.report.notes];
    if (result.relists) lines.push(`download URLs expired: listed again ${result.relists} times`);
    if (result.changed) lines.push(`${result.changed} files changed on the service during the run; their new versions were downloaded`);
    finishRun(result.report, { out: result.out, relists: result.relists, changed: result.changed }, lines);
  } finally {
    await connection.close();
  }
}

const EXPORT_EXITS: LeafHelp['exits'] = {
  0: 'every file downloaded (or already there) and listed in the manifest',
  2: "a usage error; also an --out of another company, or one that exists with no base URL",
  3: 'finished, but some files failed (see --report); a rerun fetches only those',
  130: true,
  143: true,
};

export const photosExportCommand = leafCommand<ExportArgs>({
  command: 'export',
  describe: 'Download every face photo to a folder or a zip',
  builder: (y: Argv) => exportOptions(y, false),
  handler: (argv) => withEnding(argv, 'photos export', (ending) => handle('photos', argv, ending.runsFiles())),
}, {
  examples: [
    ['wds-files photos export -o backup/photos', 'every face photo into a folder; a rerun downloads only what is new or missing'],
    ['wds-files photos export -o photos.zip --since 2026-01-01', 'the photos updated since New Year into one zip'],
  ],
  exits: EXPORT_EXITS,
  env: CONNECTION_ENV,
});

export const attachmentsExportCommand = leafCommand<ExportArgs>({
  command: 'export',
  describe: 'Download every attachment (every file part of every sheet) to a folder or a zip',
  builder: (y: Argv) => exportOptions(y, true),
  handler: (argv) => withEnding(argv, 'attachments export', (ending) => handle('attachments', argv, ending.runsFiles())),
}, {
  examples: [
    ['wds-files attachments export -o attachments.zip', 'every file part of every sheet into one zip'],
    ['wds-files attachments export -o out/certificates --sheet 2 --field 1306', 'only one file part of one sheet, into a folder'],
  ],
  exits: EXPORT_EXITS,
  env: CONNECTION_ENV,
});
