/**
 * `wds-files validate FILE... [--online] [--schema]`: each problem of each pipeline file as
 * `FILE:LINE:COLUMN: message` (exit 2), or every file ok (exit 0). `--schema` prints the JSON
 * Schema of the format, made from the same zod schema that validates.
 */
import type { Argv } from 'yargs';
import { UsageError, say } from '../connection.js';
import { DATABASE_OPTION } from '../database.js';
import { EXIT } from '../exit-codes.js';
import { EMBEDDED_EMULATOR } from '../embedded.js';
import { withEnding } from '../ending.js';
import { CONNECTION_ENV, leafCommand } from '../help-text.js';

interface ValidateArgs {
  files: string[];
  online: boolean;
  schema: boolean;
  json: boolean;
  report?: string;
  database?: string;
  quiet?: boolean;
}

export const validateCommand = leafCommand<ValidateArgs>({
  command: 'validate [files..]',
  describe: 'Check pipeline files: each problem as FILE:LINE:COLUMN: message',
  builder: (y: Argv) =>
    y.positional('files', { type: 'string', array: true, describe: 'Pipeline files (YAML)' })
      .option('online', { type: 'boolean', default: false, describe: 'Also ask the service whether the sheets, file parts and members named exist' })
      .option('schema', { type: 'boolean', default: false, describe: 'Print the JSON Schema of pipeline files and exit' })
      .option('json', { type: 'boolean', default: false, describe: 'The problems as one JSON document on stdout' })
      .option('report', { type: 'string', describe: 'Write each file and its problems (FILE, line, column, message) as JSON to FILE' })
      .option('database', { type: 'string', describe: DATABASE_OPTION }) as unknown as Argv<ValidateArgs>,
  handler: (argv) => withEnding(argv, 'validate', async (ending) => {
    if (argv.schema) {
      const { pipelineJsonSchema } = await import('../../pipeline-files/schema.js');
      process.stdout.write(`${JSON.stringify(pipelineJsonSchema(), null, 2)}\n`);
      ending.printedOwn();
      return;
    }
    const files = argv.files ?? [];
    if (!files.length) throw new UsageError('name one or more pipeline files to validate (or --schema for the JSON Schema)');
    const { validatePipelineFiles } = await import('../../pipeline-files/validate.js');
    // A report written over a pipeline file would destroy it: each file is a place it may not be.
    await ending.checkReport(files.map((f) => ({ path: f, folder: false, what: 'a pipeline file validated' })));
    const report = ending.body;
    report.online = argv.online;
    const { openSharedDatabase } = await import('../database.js');
    // Only --online asks the service anything.
    const shared = argv.online ? await openSharedDatabase(argv) : undefined;
    const { problems } = await validatePipelineFiles(files, {
      online: argv.online,
      embedded: EMBEDDED_EMULATOR,
      log: (line) => say(argv, line),
      windowStores: shared?.windowStores,
    }).finally(() => shared?.close());
    report.files = files.map((file) => {
      const own = problems.filter((p) => p.file === file);
      return { file, ok: own.length === 0, problems: own };
    });
    // A problem placed in a file not named on the command line is kept too, not lost.
    const others = problems.filter((p) => !files.includes(p.file));
    if (others.length) report.other_problems = others;
    if (problems.length) report.outcome = 'problems';
    const bad = new Set(problems.map((p) => p.file));
    ending.counts = { files: files.length, ok: files.filter((f) => !bad.has(f)).length, problems: problems.length };
    ending.print({ ok: problems.length === 0, problems }, () => problems.map((p) => `${p.file}:${p.line}:${p.column}: ${p.message}`));
    if (!argv.json) for (const file of files.filter((f) => !bad.has(f))) say(argv, `${file}: ok`);
    if (problems.length) process.exitCode = EXIT.usage;
  }),
}, {
  examples: [
    ['wds-files validate pipelines/*.yaml', 'check every example'],
    ['wds-files validate pipelines/nightly-attachments.yaml --online', 'also ask the service whether the sheets and file parts named exist'],
    ['wds-files validate --schema > pipeline.schema.json', 'the schema, for an editor'],
  ],
  exits: { 0: 'every file is ok', 1: 'with --online: the service could not be asked', 2: 'a file has a problem (each one as FILE:LINE:COLUMN: message), or a bad option' },
  env: CONNECTION_ENV,
});
