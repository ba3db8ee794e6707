/**
 * `wds-files attachments import <dir | file.zip | manifest.csv> [--sheet ID --field ID]
 * [--mode upsert|add|replace] [--dry-run]` (DESIGN.md section 3): a thin command over the attachment
 * import pipeline.
 */
import type { Argv } from 'yargs';
import { withConnection, UsageError } from '../connection.js';
import type { ImportCommandArgs } from '../import-command.js';
import type { AttachmentImportMode } from '../../pipelines/attachment-import.js';
import { CONNECTION_ENV, leafCommand } from '../help-text.js';

interface AttachmentImportArgs extends ImportCommandArgs {
  sheet?: number;
  field?: number;
  mode: AttachmentImportMode;
}

export const attachmentsImportCommand = leafCommand<AttachmentImportArgs>({
  command: 'import <source>',
  describe: 'Upload attachments from an export, a <code>/<file> folder or zip (with --sheet --field), or a CSV (code,path[,file_name])',
  builder: (y: Argv) =>
    withConnection(y)
      .positional('source', { type: 'string', demandOption: true, describe: 'Export folder or zip, folder, .zip or .csv' })
      .option('sheet', { type: 'number', describe: 'Sheet id for a source that does not say it; from an export, restore only this sheet\'s files' })
      .option('field', { type: 'number', describe: 'File part (custom field id) for a source that does not say it; from an export, only its files' })
      .option('mode', { choices: ['upsert', 'add', 'replace'] as const, default: 'upsert' as const, describe: 'upsert: replace a file of the same name, else add' })
      .option('dry-run', { type: 'boolean', default: false, describe: 'Check everything and send with Dry-Run: 1; change nothing' })
      .option('emulator', { type: 'boolean', default: false, describe: 'With no --base-url, import into the embedded emulator all the same (it forgets everything when the command ends)' })
      .option('report', { type: 'string', describe: 'Write the per-file report (JSON) to FILE' })
      .check((argv) => {
        if ((argv.sheet === undefined) !== (argv.field === undefined)) throw new UsageError('--sheet and --field go together');
        return true;
      }) as unknown as Argv<AttachmentImportArgs>,
  handler: async (argv) => {
    // Loaded here, not at start, as every command's implementation is.
    const [{ runAttachmentImport }, { runImportCommand }] = await Promise.all([import('../../pipelines/attachment-import.js'), import('../import-command.js')]);
    await runImportCommand('attachments import', argv, (common) => runAttachmentImport({
      ...common,
      sheet: argv.sheet,
      field: argv.field,
      mode: argv.mode,
    }));
  },
}, {
  examples: [
    ['wds-files attachments import ./certificates --sheet 2 --field 1306 --mode add', 'a folder of <code>/<file> into one file part'],
    ['wds-files attachments import attachments.zip --dry-run', 'an export, checked and sent with Dry-Run: 1; nothing changes'],
  ],
  exits: { 3: 'finished, but some files were invalid, conflicting or refused (see --report)', 130: true, 143: true },
  env: CONNECTION_ENV,
});
