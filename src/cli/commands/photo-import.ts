/**
 * `wds-files photos import <dir | file.zip | manifest.csv> [--mode upsert|register|update]
 * [--no-trim] [--no-normalize] [--dry-run]` (DESIGN.md section 3): a thin command over the photo
 * import pipeline.
 */
import type { Argv } from 'yargs';
import { withConnection } from '../connection.js';
import type { ImportCommandArgs } from '../import-command.js';
import type { PhotoImportMode } from '../../pipelines/photo-import.js';
import { CONNECTION_ENV, leafCommand } from '../help-text.js';

interface PhotoImportArgs extends ImportCommandArgs {
  mode: PhotoImportMode;
  trim: boolean;
  normalize: boolean;
}

export const photosImportCommand = leafCommand<PhotoImportArgs>({
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
    // Loaded here, not at start: sharp and heic-decode are heavy, and other commands never need them.
    const [{ runPhotoImport }, { runImportCommand }] = await Promise.all([import('../../pipelines/photo-import.js'), import('../import-command.js')]);
    await runImportCommand('photos import', argv, (common) => runPhotoImport({
      ...common,
      mode: argv.mode,
      trimming: argv.trim,
      normalize: argv.normalize,
    }));
  },
}, {
  examples: [
    ['wds-files photos import ./new-photos --dry-run', 'check a folder of <code>.jpg; send nothing that changes'],
    ['wds-files photos import photos.csv --mode update', 'the photos a CSV (code,path) names, for members who have one already'],
    ['wds-files photos import backup/photos', 'an export, sent back'],
  ],
  exits: { 3: 'finished, but some files were invalid, conflicting or refused (see --report)', 130: true, 143: true },
  env: CONNECTION_ENV,
});
