/**
 * `wds-files run FILE [--dry-run]`: one run of a pipeline file, with the exit codes, report and
 * interruption of the other commands (0, 1, 2, 3, 130/143), and its notification when `notify.on`
 * asks for one.
 */
import type { Argv } from 'yargs';
import { parseDuration } from '../../util/duration.js';
import { say, UsageError } from '../connection.js';
import { DATABASE_OPTION } from '../database.js';
import { withEnding } from '../ending.js';
import { clientLogger, sayError } from '../log.js';
import { EMBEDDED_EMULATOR } from '../embedded.js';
import { stopSignal } from '../stop-signal.js';
import { loadOrExit, pipelinePlaces } from './pipeline-file.js';
import { CONNECTION_ENV, leafCommand } from '../help-text.js';
import type { LoadedPipeline } from '../../pipeline-files/load.js';

interface RunArgs {
  file: string;
  'dry-run': boolean;
  emulator: boolean;
  json: boolean;
  report?: string;
  'wait-lock'?: string;
  'allow-deletions': boolean;
  database?: string;
  quiet?: boolean;
}

/**
 * With no base URL an export runs against the embedded emulator's sample company: into a new
 * target that is a try, into an existing export or archive it would mix the sample company's files
 * with the real ones (and an archive's retention could then remove a real snapshot).
 */
async function refuseEmbeddedInto(file: string, to: LoadedPipeline['to']): Promise<void> {
  const [kind, out] = 'archive' in to ? ['archive', to.archive] as const : 'folder' in to ? ['folder', to.folder] as const : 'zip' in to ? ['zip', to.zip] as const : [null, null];
  if (kind === null) return;
  const { existingExport } = await import('../../archive/target-source.js');
  const there = await existingExport(out, kind, 'archive' in to ? to.s3 : undefined);
  if (!there) return;
  throw new UsageError(`${file}: to.${kind} ${out} holds ${there}, and there is no connection.base_url or WDS_BASE_URL: the run would add the embedded emulator's sample company to it. Set one, or name a new target; to run against the sample company all the same, add --emulator. Nothing was changed.`);
}

export const runCommand = leafCommand<RunArgs>({
  command: 'run <file>',
  describe: 'Run a pipeline file once',
  builder: (y: Argv) =>
    y.positional('file', { type: 'string', demandOption: true, describe: 'Pipeline file (YAML)' })
      .option('dry-run', { type: 'boolean', default: false, describe: 'Imports: every check, sent with Dry-Run: 1, nothing moved; exports: the plan, nothing written' })
      .option('emulator', { type: 'boolean', default: false, describe: 'With no base URL, run against the embedded emulator all the same: an import (it forgets everything when the command ends), or an export into an existing target' })
      .option('json', { type: 'boolean', default: false, describe: 'The run summary as one JSON line on stdout; logs on stderr' })
      .option('report', { type: 'string', describe: 'Write the per-file report (JSON) to FILE' })
      .option('wait-lock', { type: 'string', describe: 'If another run holds the target, wait for it up to DURATION (30s, 5m, 1h) instead of refusing' })
      .option('allow-deletions', { type: 'boolean', default: false, describe: 'Archives: make this run\'s snapshot latest however many files the service deleted (the pipeline\'s max_delete set aside once)' })
      .option('database', { type: 'string', describe: DATABASE_OPTION })
      .check((args) => {
        if (args['wait-lock'] !== undefined && parseDuration(String(args['wait-lock'])) === null) throw new UsageError(`--wait-lock must be a duration such as 30s, 5m or 1h, got "${args['wait-lock']}"`);
        return true;
      }) as unknown as Argv<RunArgs>,
  handler: (argv) => withEnding(argv, 'run', async (ending) => {
    ending.runsFiles();
    const pipeline = await loadOrExit(argv.file);
    const log = (line: string): void => say(argv, line);
    const isImport = !('service' in pipeline.from);
    const hasBaseUrl = Boolean(pipeline.connection.base_url ?? process.env.WDS_BASE_URL);
    if (isImport && !hasBaseUrl && !argv['dry-run'] && !argv.emulator) {
      throw new UsageError(`${argv.file}: no connection.base_url or WDS_BASE_URL: the import would go to the embedded emulator, which forgets everything when this command ends. Set one, or add --emulator to try it there all the same.`);
    }
    if (!isImport && !hasBaseUrl && !argv['dry-run'] && !argv.emulator) await refuseEmbeddedInto(argv.file, pipeline.to);
    // The pipeline's stages, the locks and the notifier load when a run starts, not at start.
    const [{ commandLine }, { runPipelineOnce }, { notifyRun }, { openSharedDatabase }] = await Promise.all([
      import('../preflight.js'), import('../../pipeline-files/run.js'), import('../../pipeline-files/notify.js'), import('../database.js'),
    ]);
    await ending.checkReport(pipelinePlaces(pipeline));
    const shared = await openSharedDatabase(argv);
    const { summary, report, lines } = await runPipelineOnce(pipeline, {
      signal: stopSignal(),
      dryRun: argv['dry-run'],
      log,
      embedded: EMBEDDED_EMULATOR,
      command: commandLine(),
      waitLockMs: argv['wait-lock'] ? parseDuration(argv['wait-lock']) ?? 0 : 0,
      logger: clientLogger,
      keepItems: Boolean(argv.report),
      tokenCache: true,
      allowDeletions: argv['allow-deletions'],
      windowStores: shared?.windowStores,
      journals: shared?.journals,
    }).finally(() => shared?.close());
    // A dry run changed nothing: no one is told about it.
    if (!argv['dry-run']) await notifyRun(pipeline, summary, log);
    // The run's summary is what --json printed before every command's line had one shape: all of it stays.
    if (report) ending.fileRun(report, { ...summary }, lines);
    else {
      // A run that ended before its files has no counts of its own: every outcome is 0.
      ending.counts = { ...ending.counts, ...summary.counts };
      Object.assign(ending.body, summary, { counts: ending.counts });
      ending.print({ ...summary, counts: ending.counts }, () => []);
      if (summary.status === 'interrupted') ending.body.outcome = 'interrupted';
    }
    // A snapshot held back has no failed file to make the run partial: its summary does.
    if (summary.status === 'partial') ending.body.outcome = 'problems';
    if (summary.error) {
      ending.failed(summary.error, summary.error_code);
      sayError(`wds-files: ${summary.error}`);
    }
    process.exitCode = summary.exit_code;
  }),
}, {
  examples: [
    ['wds-files run pipelines/photos-to-zip.yaml', 'one run, now'],
    ['wds-files run pipelines/photo-dropbox.yaml --dry-run', 'every check, nothing moved or sent'],
    ['wds-files run pipelines/nightly-attachments.yaml --allow-deletions', 'the service did lose most files: make this snapshot latest'],
    ['*/15 * * * * cd /srv/wds && wds-files run pipelines/photo-dropbox.yaml -q', 'a crontab line'],
  ],
  exits: { 2: "a usage error; also a target of another company, or one that exists with no base URL", 3: true, 130: true, 143: true },
  env: CONNECTION_ENV,
});
