/**
 * `wds-files attachments import <dir | file.zip | manifest.csv> [--sheet ID --field ID]
 * [--mode upsert|add|replace] [--dry-run]` (DESIGN.md section 3): a thin command over the attachment
 * import pipeline.
 */
import type { Argv, CommandModule } from 'yargs';
import { resolve } from 'node:path';
import { connect, withConnection, UsageError, type ConnectionArgs } from '../connection.js';
import { stopSignal } from '../stop-signal.js';
import { ImportJournal } from '../../stages/journal.js';
import { finishRun, type OutputArgs } from '../output.js';
import { Preflight } from '../preflight.js';
import { createImportProgress } from '../import-progress.js';
import type { WindowOption } from '../../client/options.js';
import type { AttachmentImportMode } from '../../pipelines/attachment-import.js';
import { openSource } from '../../sources/open-source.js';

interface AttachmentImportArgs extends ConnectionArgs, OutputArgs {
  source: string;
  sheet?: number;
  field?: number;
  mode: AttachmentImportMode;
  'dry-run': boolean;
  emulator: boolean;
}

export const attachmentsImportCommand: CommandModule<object, AttachmentImportArgs> = {
  command: 'import <source>',
  describe: 'Upload attachments from an export, a <code>/<file> folder or zip (with --sheet --field), or a CSV (code,path[,file_name])',
  builder: (y: Argv) =>
    withConnection(y)
      .positional('source', { type: 'string', demandOption: true, describe: 'Export folder or zip, folder, .zip or .csv' })
      .option('sheet', { type: 'number', describe: 'Sheet id for a source that does not say it' })
      .option('field', { type: 'number', describe: 'File part (custom field id) for a source that does not say it' })
      .option('mode', { choices: ['upsert', 'add', 'replace'] as const, default: 'upsert' as const, describe: 'upsert: replace a file of the same name, else add' })
      .option('dry-run', { type: 'boolean', default: false, describe: 'Check everything and send with Dry-Run: 1; change nothing' })
      .option('emulator', { type: 'boolean', default: false, describe: 'With no --base-url, import into the embedded emulator all the same (it forgets everything when the command ends)' })
      .option('report', { type: 'string', describe: 'Write the per-file report (JSON) to FILE' })
      .check((argv) => {
        if ((argv.sheet === undefined) !== (argv.field === undefined)) throw new UsageError('--sheet and --field go together');
        return true;
      }) as unknown as Argv<AttachmentImportArgs>,
  handler: async (argv) => {
    const { runAttachmentImport } = await import('../../pipelines/attachment-import.js');
    // The report is checked before the first request: a report that cannot be written is found
    // before anything is sent, not after.
    const preflight = new Preflight(argv);
    try {
      await preflight.report(argv.report);
      const source = await openSource(resolve(argv.source));
      // On a terminal the progress line shows the waits as a countdown; elsewhere each wait is a line.
      // The client's update window, known once connected.
      const known: { update?: WindowOption } = {};
      const progress = createImportProgress('attachments import', { quiet: argv.quiet, json: argv.json, update: () => known.update });
      const connection = await connect(argv, {
        writes: { allowEmbedded: argv.emulator },
        onWait: (event) => progress.wait(event),
        quietWaits: progress.showsWaits,
      });
      const limits = connection.client.options.limits;
      known.update = limits ? limits.update : undefined;
      try {
        const result = await runAttachmentImport({
          client: connection.client,
          source,
          sheet: argv.sheet,
          field: argv.field,
          mode: argv.mode,
          dryRun: argv['dry-run'],
          signal: stopSignal(),
          // The company's import journal; the embedded emulator is a new company each run, so it has none.
          journal: connection.embedded ? undefined : ImportJournal.open(connection.client.options.consumerKey),
          onProgress: (p) => progress.update(p),
        });
        progress.stop();
        const r = result.requests;
        const n = r.register + r.update;
        await finishRun(argv, result.report, { requests: r, waited_ms: result.waitedMs, check_ms: result.checkMs }, [
          `${n} update request${n === 1 ? '' : 's'} (${r.register} register, ${r.update} update; the fewest possible: ${r.minimum})${r.resubmitted ? `; ${r.resubmitted} files sent again after their request ended NG for others` : ''}`,
          `waited ${(result.waitedMs / 1000).toFixed(1)} s on the service's limits`,
        ]);
      } finally {
        progress.stop();
        await connection.close();
      }
    } finally {
      await preflight.end();
    }
  },
};
