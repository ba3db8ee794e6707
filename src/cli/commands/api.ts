/**
 * `wds-files api <METHOD> <PATH> [--data JSON] [--dry-run] [--wait] [--show-secrets]`: one raw call
 * with auth, limits and retries, printing the JSON answer (like `gh api`). `--wait` follows a
 * returned task to its end and prints the final task. Secrets in the answer (a webhook's
 * `secret_token`, a `password`) are masked unless `--show-secrets` (DESIGN.md section 8).
 */
import type { Argv, CommandModule } from 'yargs';
import { connect, withConnection, UsageError, type ConnectionArgs } from '../connection.js';
import { findOperation, API_PREFIX } from '../../spec/operations.js';
import { EXIT } from '../exit-codes.js';
import { redactValue, registerSecretsIn } from '../../util/redact.js';

interface ApiArgs extends ConnectionArgs {
  method: string;
  path: string;
  data?: string;
  wait: boolean;
  'dry-run': boolean;
  'show-secrets': boolean;
}

export const apiCommand: CommandModule<object, ApiArgs> = {
  command: 'api <method> <path>',
  describe: 'One raw API call with auth, limits and retries; prints the JSON answer',
  builder: (yargs: Argv) =>
    withConnection(yargs)
      .positional('method', { type: 'string', demandOption: true, describe: 'GET, POST, PUT, PATCH or DELETE' })
      .positional('path', { type: 'string', demandOption: true, describe: 'Path under /api/v2.0, e.g. /members or /tasks/12' })
      .option('data', { type: 'string', describe: 'JSON request body' })
      .option('dry-run', { type: 'boolean', default: false, describe: 'Send Dry-Run: 1 (validate, change nothing)' })
      .option('wait', { type: 'boolean', default: false, describe: 'Follow a returned task_id to its final status' })
      .option('show-secrets', { type: 'boolean', default: false, describe: 'Print secret_token and password values of the answer in clear (masked by default)' }) as unknown as Argv<ApiArgs>,
  handler: async (argv) => {
    const [rawPath, rawQuery = ''] = argv.path.split('?', 2) as [string, string?];
    const path = rawPath.startsWith(API_PREFIX) ? rawPath.slice(API_PREFIX.length) : rawPath;
    const method = argv.method.toUpperCase();
    const match = findOperation(method, path.startsWith('/') ? path : `/${path}`);
    if (match.kind === 'none') throw new UsageError(`${path} is not a path of API v2; paths look like /members, /members/face_image or /sheets/2/members`);
    if (match.kind === 'method') throw new UsageError(`${method} is not allowed on ${path}; it takes ${match.allow.join(', ')}`);
    let body: unknown;
    if (argv.data !== undefined) {
      try {
        body = JSON.parse(argv.data);
      } catch (error) {
        throw new UsageError(`--data is not valid JSON: ${(error as Error).message}`);
      }
    }
    // A secret the user sends (a webhook's secret_token) is masked in every line printed from here on.
    registerSecretsIn(body);
    if (argv['dry-run'] && !match.op.dryRun) throw new UsageError(`${match.op.id} has no dry-run mode`);
    const connection = await connect(argv);
    // What the service answers is printed masked unless asked; secrets it names are masked in log lines too.
    const print = (value: unknown): void => {
      registerSecretsIn(value);
      console.log(value === undefined || value === '' ? '' : JSON.stringify(argv['show-secrets'] ? value : redactValue(value), null, 2));
    };
    try {
      const answer = await connection.client.call(match.op.id as never, {
        params: match.params,
        query: Object.fromEntries(new URLSearchParams(rawQuery)),
        body,
        dryRun: argv['dry-run'],
      });
      const taskId = (answer as { task_id?: unknown } | undefined)?.task_id;
      if (argv.wait && typeof taskId === 'number') {
        const task = await connection.client.tasks.wait(taskId);
        print(task);
        if (task.status !== 'OK') process.exitCode = EXIT.partial;
        return;
      }
      print(answer);
    } finally {
      await connection.close();
    }
  },
};
