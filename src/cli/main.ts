#!/usr/bin/env node
/**
 * `wds-files`: the command line (DESIGN.md section 3). Commands are thin: each one parses its
 * options here and hands them to a pipeline, the client or the emulator.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { emulatorCommand } from './commands/emulator.js';
import { apiCommand } from './commands/api.js';
import { photosExportCommand, attachmentsExportCommand } from './commands/export.js';
import { verifyCommand } from './commands/verify.js';
import { photosImportCommand } from './commands/photo-import.js';
import { attachmentsImportCommand } from './commands/attachment-import.js';
import { UsageError } from './connection.js';
import { isWdsError } from '../client/errors.js';
import { redact } from '../util/redact.js';
import { EXIT } from './exit-codes.js';
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
  await yargs(argv)
    .scriptName('wds-files')
    // yargs would read the package.json nearest the working directory: another project's, once installed.
    .version((JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version)
    .command(emulatorCommand)
    .command(apiCommand)
    .command('photos', 'Face photos: export and import', (y) => y.command(photosExportCommand).command(photosImportCommand).demandCommand(1, 'name a photos command'))
    .command('attachments', 'Attachments: export and import', (y) => y.command(attachmentsExportCommand).command(attachmentsImportCommand).demandCommand(1, 'name an attachments command'))
    .command(verifyCommand)
    .demandCommand(1, 'name a command; see --help')
    .strict()
    .recommendCommands()
    .help()
    .fail((message, error) => {
      // A failed check or a bad option is a usage error; an error thrown by a command is fatal.
      if (error && !message) {
        const code = isWdsError(error) ? ` [${error.code}]` : '';
        console.error(`wds-files: ${redact(error.message)}${code}`);
        process.exit(error instanceof UsageError ? EXIT.usage : EXIT.fatal);
      }
      console.error(`wds-files: ${message ?? error?.message}\nRun wds-files --help for usage.`);
      process.exit(EXIT.usage);
    })
    .parseAsync();
}

await main(hideBin(process.argv));
