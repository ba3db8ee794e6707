/**
 * `wds-files legacy api|sheet` (DESIGN.md sections 3 and 11): the legacy interface v1.x. The
 * arguments are checked here, before anything is loaded or sent; the work is in legacy-api.ts and
 * legacy-sheet.ts, loaded only when the command runs.
 */
import type { Argv, CommandModule } from 'yargs';
import { UsageError, withConnection } from '../connection.js';
import { withTargetOptions } from '../target-options.js';
import type { LegacyApiArgs, LegacyArgs, LegacySheetArgs } from './legacy-args.js';
import { formatOf } from '../../sinks/sheet-formats.js';
import { LEGACY_VERSIONS, LATEST_LEGACY_VERSION, findLegacyOperation, isLegacyVersion, versionAtLeast, type LegacyOperation, type LegacyVersion } from '../../client/v1/operation-kinds.js';
import { jsonKind, jsonProblem } from '../../util/json-problem.js';
import { LEGACY_ENV, leafCommand } from '../help-text.js';

const VERSION_WORDS = `${LEGACY_VERSIONS.slice(0, -1).join(', ')} or ${LEGACY_VERSIONS.at(-1)}`;

/** `--api-version` of the legacy commands: the interface's version (`--version` is the program's, as everywhere). */
function withVersion<T>(yargs: Argv<T>): Argv<T & LegacyArgs> {
  return withConnection(yargs)
    .option('api-version', { type: 'string', describe: `Version of the legacy interface: ${VERSION_WORDS} (default ${LATEST_LEGACY_VERSION})` }) as Argv<T & LegacyArgs>;
}

function versionOf(argv: LegacyArgs): LegacyVersion | undefined {
  const version = argv['api-version'];
  if (version === undefined) return undefined;
  if (!isLegacyVersion(version)) throw new UsageError(`--api-version must be ${VERSION_WORDS} (a version of the legacy interface), got "${version}"`);
  return version;
}

/**
 * The refusal of `--version v1.2`, the legacy commands' old spelling of `--api-version`, or
 * undefined. `--version` prints wds-files' version on every command and takes no value: run as
 * it was written, a script's download would silently become a version line and exit 0.
 */
export function oldApiVersionFlag(argv: string[]): string | undefined {
  for (let i = 0; i < argv.length && argv[i] !== '--'; i += 1) {
    const word = argv[i]!;
    const value = word.startsWith('--version=') ? word.slice('--version='.length) : word === '--version' ? argv[i + 1] : undefined;
    if (value === undefined || !/^v?\d+(?:\.\d+)*$/.test(value)) continue;
    return `--version takes no value: it prints the version of wds-files. The legacy interface's version is --api-version (--api-version ${value}).`;
  }
  return undefined;
}

/** The operation of `legacy api`'s path, and the version to call it with; every refusal says why. */
export function checkApiCall(argv: Pick<LegacyApiArgs, 'path' | 'api-version' | 'dry-run' | 'wait' | 'data'>): { op: LegacyOperation; path: string; version: LegacyVersion; body: unknown } {
  let version = versionOf(argv);
  if (argv.path.includes('?')) throw new UsageError(`${argv.path}: the legacy paths take no query; for dryrun=1 add --dry-run`);
  let path = argv.path.startsWith('/') ? argv.path : `/${argv.path}`;
  const prefix = /^\/api\/(v\d+\.\d+)(?=\/)/.exec(path);
  if (prefix) {
    const named = prefix[1]!;
    if (!isLegacyVersion(named)) throw new UsageError(`${argv.path} is not a path of the legacy interface, whose versions are ${VERSION_WORDS}; for API v2 use wds-files api`);
    if (version && version !== named) throw new UsageError(`${argv.path} names ${named} but --api-version says ${version}; give one of them`);
    version = named;
    path = path.slice(prefix[0].length);
  }
  version ??= LATEST_LEGACY_VERSION;
  const op = findLegacyOperation(path);
  if (!op) throw new UsageError(`${path} is not a path of the legacy interface; paths look like /user, /department, /sheet/0, /sheet/2/data/add or /task/12`);
  if (!versionAtLeast(version, op.since)) throw new UsageError(`${path} (${op.name}) exists from ${op.since} on; ${version} does not have it (add --api-version ${op.since} or later)`);
  if (op.kind === 'token') throw new UsageError('/get_token is called for you on every legacy command (its token is never printed); name the operation you want');
  if (argv['dry-run'] && op.kind !== 'read' && op.kind !== 'update') throw new UsageError(`${path} (${op.name}) has no dry-run mode; only the reads and the updates have one`);
  if (argv.wait && op.kind !== 'update') {
    const hint = op.kind === 'async-start' ? '; to follow an asynchronous read to its records, use wds-files legacy sheet ID --async' : '';
    throw new UsageError(`--wait follows the progress_id of an update; ${path} (${op.name}) answers none${hint}`);
  }
  let body: unknown = {};
  if (argv.data !== undefined) {
    try {
      body = JSON.parse(argv.data);
    } catch {
      // JSON.parse's message quotes the text, which may hold a password: the place and the rule only.
      throw new UsageError(`--data is not valid JSON: ${jsonProblem(argv.data) ?? 'it does not read as JSON'}`);
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new UsageError(`--data must be a JSON object, such as '{"users": [...]}', got ${jsonKind(body)}`);
  }
  return { op, path, version, body };
}

export const legacyApiCommand = leafCommand<LegacyApiArgs>({
  command: 'api <path>',
  describe: 'One raw call of the legacy interface (POST) with its token and limits; prints the JSON answer',
  builder: (yargs: Argv) =>
    withVersion(yargs)
      .positional('path', { type: 'string', demandOption: true, describe: 'Path under /api/v1.x, e.g. /user, /sheet/0 or /task/12' })
      .option('data', { type: 'string', describe: 'JSON request body (an object); default {}' })
      .option('dry-run', { type: 'boolean', default: false, describe: 'Send dryrun=1: an update is checked and changes nothing, a read answers its header part' })
      .option('wait', { type: 'boolean', default: false, describe: 'Follow the progress_id an update answers to its final status' })
      .option('show-secrets', { type: 'boolean', default: false, describe: 'Print password and token values of the answer in clear (masked by default)' })
      .option('report', { type: 'string', describe: 'Write the request made and how it ended (JSON) to FILE' })
      .check((argv) => {
        checkApiCall(argv as unknown as LegacyApiArgs);
        return true;
      }) as unknown as Argv<LegacyApiArgs>,
  handler: async (argv) => {
    const { runLegacyApi } = await import('./legacy-api.js');
    await runLegacyApi(argv, checkApiCall(argv));
  },
}, {
  examples: [
    ['wds-files legacy api /department', 'every department, as the legacy interface lists them'],
    [`wds-files legacy api /sheet/2/data/update --data '{"data":[{"member_code":"A0001","definition_1306":"x"}]}' --dry-run`, 'check an update; nothing changes'],
    [`wds-files legacy api /department/add --data '{"departments":[...]}' --wait`, 'add departments and wait for the task to end'],
    ['wds-files legacy api /sheet/0 --api-version v1.0', 'a read through the interface\'s first version'],
  ],
  exits: {
    0: 'the service answered OK (with --wait: the task ended OK)',
    1: 'the service refused the call or was not reached',
    3: 'the answer, or the task followed, says NG or ERROR',
    130: 'stopped by Ctrl-C (SIGINT); an update already sent goes on at the service',
    143: 'stopped by SIGTERM, likewise',
  },
  env: LEGACY_ENV,
});

const MAX_SHEET_ID = 2 ** 31 - 1;

/** `legacy sheet`'s sheet id, version and output format; every refusal says why. */
export function checkSheetCall(argv: Pick<LegacySheetArgs, 'sheet-id' | 'out' | 'api-version' | 'async'>): { sheetId: number; version: LegacyVersion; format: 'csv' | 'jsonl' } {
  const id = String(argv['sheet-id']);
  if (!/^\d+$/.test(id) || Number(id) > MAX_SHEET_ID) throw new UsageError(`SHEET_ID must be a whole number of 0 or more (0 is the base information sheet), got "${id}"`);
  const format = formatOf(argv.out);
  if (!format) throw new UsageError(`--out ${argv.out}: the file name must end in .csv or .jsonl (the format follows the extension)`);
  const version = versionOf(argv) ?? LATEST_LEGACY_VERSION;
  if (argv.async && !versionAtLeast(version, 'v1.1')) throw new UsageError(`--async needs the asynchronous read, which exists from v1.1 on; ${version} does not have it`);
  return { sheetId: Number(id), version, format };
}

export const legacySheetCommand = leafCommand<LegacySheetArgs>({
  command: 'sheet <sheet-id>',
  describe: 'Download a whole sheet (0: base information) to a CSV or JSONL file',
  builder: (yargs: Argv) =>
    withTargetOptions(withVersion(yargs))
      .positional('sheet-id', { type: 'string', demandOption: true, describe: 'The sheet id; 0 is the base information sheet' })
      .option('out', { alias: 'o', type: 'string', demandOption: true, describe: 'A file ending in .csv (UTF-8 with BOM, labels first) or .jsonl (one record per line)' })
      .option('async', { type: 'boolean', default: false, describe: 'Use the asynchronous read (polled) instead of the direct one, as is done anyway when the direct read times out' })
      .option('force', { type: 'boolean', default: false, describe: 'Replace a file at --out that is not an earlier download' })
      .option('report', { type: 'string', describe: 'Write the file written, its records and how the download ended (JSON) to FILE' })
      .check((argv) => {
        checkSheetCall(argv as unknown as LegacySheetArgs);
        return true;
      }) as unknown as Argv<LegacySheetArgs>,
  handler: async (argv) => {
    const { runLegacySheet } = await import('./legacy-sheet.js');
    await runLegacySheet(argv, checkSheetCall(argv));
  },
}, {
  examples: [
    ['wds-files legacy sheet 0 --out members.csv', 'the base information of every member, for Excel'],
    ['wds-files legacy sheet 2 --out sheet-2.jsonl --async', 'a large sheet, by the asynchronous read'],
  ],
  exits: {
    0: 'the sheet was written whole',
    1: 'the service refused or was not reached, the file cannot be written, or another run holds it',
    130: 'stopped by Ctrl-C (SIGINT); the file that was there is as it was',
    143: 'stopped by SIGTERM, likewise',
  },
  env: LEGACY_ENV,
});

export const legacyCommand: CommandModule = {
  command: 'legacy',
  describe: 'The legacy interface v1.x: raw calls and whole-sheet downloads',
  builder: (y: Argv) => y.command(legacyApiCommand).command(legacySheetCommand).demandCommand(1, 'name a legacy command: api or sheet'),
  handler: () => undefined,
};
