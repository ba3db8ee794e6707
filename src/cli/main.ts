#!/usr/bin/env node
/**
 * `wds-files`: the command line (DESIGN.md section 3). Commands are thin: each one parses its
 * options here and hands them to a pipeline, the client or the emulator. A command module defines
 * its options with nothing heavy; its handler imports what it runs (the client, the pipelines, zod,
 * the emulator), so that `--help` or one command does not load every command's dependencies.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import yargs, { type Argv } from 'yargs';
import { hideBin } from 'yargs/helpers';
import { emulatorCommand } from './commands/emulator.js';
import { apiCommand } from './commands/api.js';
import { photosExportCommand, attachmentsExportCommand } from './commands/export.js';
import { verifyCommand } from './commands/verify.js';
import { validateCommand } from './commands/validate.js';
import { planCommand } from './commands/plan.js';
import { runCommand } from './commands/run.js';
import { archiveCommand } from './commands/archive.js';
import { legacyCommand, oldApiVersionFlag } from './commands/legacy.js';
import { photosImportCommand } from './commands/photo-import.js';
import { attachmentsImportCommand } from './commands/attachment-import.js';
import { UsageError } from './connection.js';
import { configureLog, sayError } from './log.js';
import { unknownWordMessage } from './did-you-mean.js';
import { hideSecretFlag, registerCommandLineSecrets, secretValueMissing } from './secret-args.js';
import { leafCommand, withHelpText } from './help-text.js';
import { isWdsError } from '../client/errors.js';
import { EXIT } from './exit-codes.js';
import { scheduleCommand } from './commands/schedule.js';
import { webhookCommand } from './commands/webhook.js';
import { fleetCommand } from './commands/fleet.js';
import { tuneMemory } from '../util/runtime.js';
import { PACKAGE_ROOT } from './paths.js';

tuneMemory();

/**
 * A reader that stops early (`wds-files verify DIR | head -1`) closes the pipe. What is left to
 * print has nowhere to go, but the command still ends its work and exits with its own code,
 * instead of dying with an EPIPE stack trace.
 */
function quietWhenReaderLeaves(stream: NodeJS.WriteStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') return;
    throw error;
  });
}
quietWhenReaderLeaves(process.stdout);
quietWhenReaderLeaves(process.stderr);

export async function main(argv: string[]): Promise<void> {
  // Before yargs reads the line: its usage errors quote what was typed, and every printed line is redacted.
  registerCommandLineSecrets(argv);
  const lineProblem = secretValueMissing(argv) ?? oldApiVersionFlag(argv);
  if (lineProblem) {
    sayError(`wds-files: ${lineProblem}\nRun wds-files --help for usage.`);
    process.exit(EXIT.usage);
  }
  hideSecretFlag(argv, argv.some((arg) => arg === '-q' || arg === '--quiet'));
  const cli: Argv = yargs(argv)
    .scriptName('wds-files')
    // yargs would read the package.json nearest the working directory: another project's, once installed.
    .version((JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version)
    .option('verbose', { alias: 'v', type: 'count', global: true, describe: 'Request lines (method, path, status, ms) on stderr; -vv adds the time to each line' })
    .option('quiet', { alias: 'q', type: 'boolean', default: false, global: true, describe: 'No progress or wait lines on stderr; errors still show' })
    .option('log-file', { type: 'string', global: true, describe: 'Also write every line, requests included, as JSON lines to FILE' })
    .middleware(async (args) => {
      // A middleware's throw would escape .fail(): a usage error is said and ends the run here.
      try {
        // Loaded here, with zod, once a command is about to run: --help and --version never need it.
        const [{ checkNumberOptions }, { checkEmptyOptions }] = await Promise.all([import('./number-options.js'), import('./empty-options.js')]);
        checkEmptyOptions(args, argv);
        checkNumberOptions(args, argv);
        const logFile = args['log-file'] as string | undefined;
        if (logFile !== undefined) {
          const [{ clashProblem }, { isZipTarget }, { statSync }] = await Promise.all([import('./path-clash.js'), import('../pipelines/export-defaults.js'), import('node:fs')]);
          const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
          const [out, report, source] = [str(args.out), str(args.report), str(args.source)];
          const clash = clashProblem(logFile, [
            ...(out !== undefined ? [{ path: out, folder: !isZipTarget(out), what: '--out' }] : []),
            ...(report !== undefined ? [{ path: report, folder: false, what: '--report' }] : []),
            ...(source !== undefined ? [{ path: source, folder: statSync(source, { throwIfNoEntry: false })?.isDirectory() ?? false, what: 'the import source' }] : []),
          ]);
          if (clash) throw new UsageError(`--log-file ${logFile}: ${clash}`);
        }
        configureLog({ verbose: Number(args.verbose ?? 0), quiet: Boolean(args.quiet), logFile: args['log-file'] as string | undefined });
      } catch (error) {
        const text = error instanceof UsageError ? error.message : `--log-file ${String(args['log-file'])} cannot be written: ${(error as Error).message}`;
        sayError(`wds-files: ${text}\nRun wds-files --help for usage.`);
        process.exit(EXIT.usage);
      }
      // Temporary folders of runs killed with SIGKILL (their process gone) go before this one makes its own.
      await import('../util/temp-dir.js').then(({ sweepTempDirs }) => sweepTempDirs());
    }, true)
    .command(emulatorCommand)
    .command(scheduleCommand)
    .command(apiCommand)
    .command('photos', 'Face photos: export and import', (y) => y.command(photosExportCommand).command(photosImportCommand).demandCommand(1, 'name a photos command'))
    .command('attachments', 'Attachments: export and import', (y) => y.command(attachmentsExportCommand).command(attachmentsImportCommand).demandCommand(1, 'name an attachments command'))
    .command(verifyCommand)
    .command(validateCommand)
    .command(planCommand)
    .command(runCommand)
    .command(archiveCommand)
    .command(legacyCommand)
    .command(webhookCommand)
    .command(fleetCommand)
    // A command of our own rather than yargs' .completion(), which prints the script even for --help.
    .command(leafCommand({
      command: 'completion',
      describe: 'Print a bash or zsh completion script (wds-files completion >> ~/.bashrc)',
      builder: (y: Argv) => y,
      handler: (): void => {
        cli.showCompletionScript();
      },
    }, {
      examples: [
        ['wds-files completion >> ~/.bashrc', 'complete commands and options in bash'],
        ['wds-files completion >> ~/.zshrc', 'the same for zsh'],
      ],
      exits: { 0: 'the script was printed' },
      env: [],
    }))
    .demandCommand(1, 'name a command; see --help')
    .strict()
    .help()
    .alias('h', 'help')
    .wrap(Math.max(100, process.stdout.columns ?? 0))
    .fail((message, error, usage) => {
      // A failed check or a bad option is a usage error; an error thrown by a command is fatal.
      if (error && !message) {
        const code = isWdsError(error) ? ` [${error.code}]` : '';
        sayError(`wds-files: ${error.message}${code}`);
        process.exit(error instanceof UsageError ? EXIT.usage : EXIT.fatal);
      }
      sayError(`wds-files: ${unknownWordMessage(message, usage, cli, argv) ?? message ?? error?.message}\nRun wds-files --help for usage.`);
      process.exit(EXIT.usage);
    });
  await withHelpText(cli).parseAsync();
}

// Thrown outside the promise, as a rejected top-level await would be: Node prints it and exits 1.
// (The CLI ships as a CommonJS bundle, src/cli/code-cache.ts, which has no top-level await.)
main(hideBin(process.argv)).catch((error: unknown) => setImmediate(() => {
  throw error;
}));
