/**
 * `wds-files plan FILE`: what a run of the pipeline would do, changing nothing: the files to
 * fetch or send, the requests of each kind against the service's limits, and the time the
 * limits alone impose.
 */
import type { Argv } from 'yargs';
import { say, UsageError } from '../connection.js';
import { DATABASE_OPTION } from '../database.js';
import { clientLogger } from '../log.js';
import { EMBEDDED_EMULATOR } from '../embedded.js';
import { loadOrExit, pipelinePlaces } from './pipeline-file.js';
import { withEnding } from '../ending.js';
import { CONNECTION_ENV, leafCommand } from '../help-text.js';

interface PlanArgs {
  file: string;
  json: boolean;
  report?: string;
  database?: string;
  quiet?: boolean;
}

export const planCommand = leafCommand<PlanArgs>({
  command: 'plan <file>',
  describe: 'Show what a run of a pipeline file would do; changes nothing',
  builder: (y: Argv) =>
    y.positional('file', { type: 'string', demandOption: true, describe: 'Pipeline file (YAML)' })
      .option('json', { type: 'boolean', default: false, describe: 'The plan as one JSON document on stdout' })
      .option('report', { type: 'string', describe: 'Write the plan (files and requests of the pipeline) as JSON to FILE' })
      .option('database', { type: 'string', describe: DATABASE_OPTION }) as unknown as Argv<PlanArgs>,
  handler: (argv) => withEnding(argv, 'plan', async (ending) => {
    const pipeline = await loadOrExit(argv.file);
    const [{ connectPipeline }, { planLines, planPipeline }] = await Promise.all([
      import('../../pipeline-files/connection.js'), import('../../pipeline-files/plan.js'),
    ]);
    await ending.checkReport([{ path: argv.file, folder: false, what: 'the pipeline file' }, ...pipelinePlaces(pipeline)]);
    const report = ending.body;
    report.file = argv.file;
    report.pipeline = pipeline.name;
    const { openSharedDatabase } = await import('../database.js');
    const shared = await openSharedDatabase(argv);
    const connection = await connectPipeline(pipeline, { embedded: EMBEDDED_EMULATOR, log: (line) => say(argv, line), logger: clientLogger, windowStores: shared?.windowStores })
      .catch(async (error: Error) => {
        await shared?.close();
        throw new UsageError(error.message);
      });
    try {
      // The run skips what the company's journal says was applied, so the plan reads it too.
      const { ImportJournal } = await import('../../stages/import/journal/journal.js');
      const journal = connection.embedded || 'service' in pipeline.from ? undefined : await ImportJournal.of(connection.client.options.consumerKey, shared?.journals);
      const plan = await planPipeline(pipeline, connection.client, { journal });
      report.plan = plan;
      const { total, transfer, kept, refused } = plan.files;
      ending.counts = { total, transfer, kept, refused };
      ending.print(plan as unknown as Record<string, unknown>, () => [`plan of ${pipeline.name} (${argv.file}):`, ...planLines(plan).map((line) => `  ${line}`)]);
    } finally {
      await connection.close();
      await shared?.close();
    }
  }),
}, {
  examples: [
    ['wds-files plan pipelines/nightly-attachments.yaml', 'the files a run would fetch, its requests against the limits, and the time they impose'],
    ['wds-files plan pipelines/photo-dropbox.yaml --json', 'the same as one JSON document'],
  ],
  exits: { 0: 'the plan was printed; nothing changed', 1: 'the service could not be asked', 2: 'the pipeline file has a problem, or a bad option' },
  env: CONNECTION_ENV,
});
