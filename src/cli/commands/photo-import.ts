/**
 * `wds-files photos import <dir | file.zip | manifest.csv> [--mode upsert|register|update]
 * [--no-trim] [--no-normalize] [--dry-run]` (DESIGN.md section 3): a thin command over the photo
 * import pipeline.
 */
import type { Argv, CommandModule } from 'yargs';
import { resolve } from 'node:path';
import { connect, withConnection, type ConnectionArgs } from '../connection.js';
import { stopSignal } from '../stop-signal.js';
import { ImportJournal } from '../../stages/journal.js';
import { finishRun, type OutputArgs } from '../output.js';
import { Preflight } from '../preflight.js';
import { createImportProgress } from '../import-progress.js';
import type { WindowOption } from '../../client/options.js';
import type { PhotoImportMode } from '../../pipelines/photo-import.js';
import { openSource } from '../../sources/open-source.js';

interface PhotoImportArgs extends ConnectionArgs, OutputArgs {
  source: string;
  mode: PhotoImportMode;
  trim: boolean;
  normalize: boolean;
  'dry-run': boolean;
  emulator: boolean;
}

export const photosImportCommand: CommandModule<object, PhotoImportArgs> = {
  command: 'import <source>',
  describe: 'Upload face photos from a folder, a zip, a CSV manifest (code,path) or an export',
  builder: (y: Argv) =>
    withConnection(y)
      .positional('source', { type: 'string', demandOption: true, describe: 'Folder, .zip, .csv manifest or export' })
      .option('mode', { choices: ['upsert', 'register', 'update'] as const, default: 'upsert' as const, describe: 'upsert: register or update per member' })
      .option('trim', { type: 'boolean', default: true, describe: "The service's face trimming (--no-trim keeps the photo as sent)" })
      .option('normalize', { type: 'boolean', default: true, describe: 'Convert HEIC, WebP, TIFF, oversized or rotated photos to JPEG (--no-normalize refuses them)' })
      .option('dry-run', { type: 'boolean', default: false, describe: 'Check everything and send with Dry-Run: 1; change nothing' })
      .option('emulator', { type: 'boolean', default: false, describe: 'With no --base-url, import into the embedded emulator all the same (it forgets everything when the command ends)' })
      .option('report', { type: 'string', describe: 'Write the per-file report (JSON) to FILE' }) as unknown as Argv<PhotoImportArgs>,
  handler: async (argv) => {
    // Loaded here, not at start: sharp and heic-decode weigh some 50 MB that other commands never need.
    const { runPhotoImport } = await import('../../pipelines/photo-import.js');
    // The report is checked before the first request: a report that cannot be written is found
    // before anything is sent, not after.
    const preflight = new Preflight(argv);
    try {
      await preflight.report(argv.report);
      const source = await openSource(resolve(argv.source));
      // On a terminal the progress line shows the waits as a countdown; elsewhere each wait is a line.
      // The client's update window, known once connected.
      const known: { update?: WindowOption } = {};
      const progress = createImportProgress('photos import', { quiet: argv.quiet, json: argv.json, update: () => known.update });
      const connection = await connect(argv, {
        writes: { allowEmbedded: argv.emulator },
        onWait: (event) => progress.wait(event),
        quietWaits: progress.showsWaits,
      });
      const limits = connection.client.options.limits;
      known.update = limits ? limits.update : undefined;
      try {
        const result = await runPhotoImport({
          client: connection.client,
          source,
          mode: argv.mode,
          trimming: argv.trim,
          normalize: argv.normalize,
          dryRun: argv['dry-run'],
          signal: stopSignal(),
          // The company's import journal; the embedded emulator is a new company each run, so it has none.
          journal: connection.embedded ? undefined : ImportJournal.open(connection.client.options.consumerKey),
          onProgress: (p) => progress.update(p),
        });
        progress.stop();
        const r = result.requests;
        await finishRun(argv, result.report, { requests: r, waited_ms: result.waitedMs, check_ms: result.checkMs }, [
          `${r.register + r.update} update request${r.register + r.update === 1 ? '' : 's'} (${r.register} register, ${r.update} update; the fewest possible: ${r.minimum})${r.resubmitted ? `; ${r.resubmitted} files sent again after their request ended NG for others` : ''}`,
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
