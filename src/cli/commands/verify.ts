/** `wds-files verify <dir | file.zip>`: every file checked against the manifest; exit 3 on a problem. */
import type { Argv } from 'yargs';
import { resolve } from 'node:path';
import { EXIT } from '../exit-codes.js';
import { withEnding } from '../ending.js';
import { formatBytes } from '../../util/format.js';
import { leafCommand } from '../help-text.js';

interface VerifyArgs {
  target: string;
  json: boolean;
  report?: string;
  quiet?: boolean;
}

export const verifyCommand = leafCommand<VerifyArgs>({
  command: 'verify <target>',
  describe: 'Check every file of an export folder or zip against its manifest',
  builder: (y: Argv) =>
    y.positional('target', { type: 'string', demandOption: true, describe: 'Export folder or zip' })
      .option('json', { type: 'boolean', default: false, describe: 'One JSON summary on stdout' })
      .option('report', { type: 'string', describe: 'Write each file and how it came out (JSON) to FILE' }) as unknown as Argv<VerifyArgs>,
  handler: (argv) => withEnding(argv, 'verify', async (ending) => {
    const [{ verifyExport }, { isZipTarget }] = await Promise.all([import('../../pipelines/verify.js'), import('../../pipelines/export-defaults.js')]);
    const target = resolve(argv.target);
    // The report may not be the export it describes, nor a file in it (verify would call it extra).
    await ending.checkReport([{ path: argv.target, folder: !isZipTarget(argv.target), what: 'the export verified' }]);
    const report = ending.body;
    report.target = target;
    const { items, ...result } = await verifyExport(target, { items: argv.report !== undefined });
    Object.assign(report, { files: result.files, ok: result.ok, bytes: result.bytes, problems: result.problems.length });
    // Read from verify's temporary file as the report is written: one file at a time, not all.
    if (items) ending.reportItems(items);
    ending.counts = { ok: result.ok, problem: result.problems.length };
    if (result.problems.length) report.outcome = 'problems';
    ending.print(result, () => {
      const problems = result.problems.length;
      // Refused manifest lines are not among the files counted, so the count of problems is said too.
      const tail = problems ? `; ${problems} problem${problems === 1 ? '' : 's'}:` : '';
      return [`verify ${result.target}: ${result.ok} of ${result.files} files match the manifest (${formatBytes(result.bytes)})${tail}`, ...result.problems.map((p) => `  ${p.path}: ${p.problem}`)];
    });
    if (result.problems.length) process.exitCode = EXIT.partial;
  }),
}, {
  examples: [
    ['wds-files verify backup/photos', 'every file of an export folder against its manifest'],
    ['wds-files verify photos.zip --json', 'a zip, with the summary as JSON'],
  ],
  exits: { 0: 'every file matches the manifest', 1: 'the export or its manifest cannot be read', 3: 'some file is missing, extra or differs (each one listed)' },
  env: [],
});
