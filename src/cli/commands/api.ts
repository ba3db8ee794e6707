/**
 * `wds-files api <METHOD> <PATH> [--data JSON] [--dry-run] [--wait] [--show-secrets] [--report FILE]`:
 * one raw call with auth, limits and retries, printing the JSON answer (like `gh api`). `--wait`
 * follows a returned task to its end and prints the final task. Secrets in the answer (a webhook's
 * `secret_token`, a `password`) are masked unless `--show-secrets` (DESIGN.md section 8).
 * `--report` writes what was asked and how it ended, as every command's does (DESIGN.md section 3).
 */
import type { Argv } from 'yargs';
import { connect, withConnection, UsageError, type ConnectionArgs } from '../connection.js';
import { findOperation, API_PREFIX } from '../../spec/operations.js';
import { EXIT } from '../exit-codes.js';
import { requestCounts, withEnding, type Ending } from '../ending.js';
import { redactValue, registerSecretsIn } from '../../util/redact.js';
import { jsonProblem } from '../../util/json-problem.js';
import { CONNECTION_ENV, leafCommand } from '../help-text.js';

/** The arguments of one raw call, `api` and `legacy api` alike. */
export interface RawCallArgs extends ConnectionArgs {
  path: string;
  data?: string;
  wait: boolean;
  'dry-run': boolean;
  'show-secrets': boolean;
  report?: string;
}

interface ApiArgs extends RawCallArgs {
  method: string;
}

export const apiCommand = leafCommand<ApiArgs>({
  command: 'api <method> <path>',
  describe: 'One raw API call with auth, limits and retries; prints the JSON answer',
  builder: (yargs: Argv) =>
    withConnection(yargs)
      .positional('method', { type: 'string', demandOption: true, describe: 'GET, POST, PUT, PATCH or DELETE' })
      .positional('path', { type: 'string', demandOption: true, describe: 'Path under /api/v2.0, e.g. /members, /sheets/2 or /tasks/12' })
      .option('data', { type: 'string', describe: 'JSON request body' })
      .option('dry-run', { type: 'boolean', default: false, describe: 'Send Dry-Run: 1 (validate, change nothing)' })
      .option('wait', { type: 'boolean', default: false, describe: 'Follow a returned task_id to its final status' })
      .option('show-secrets', { type: 'boolean', default: false, describe: 'Print secret_token and password values of the answer in clear (masked by default)' })
      .option('report', { type: 'string', describe: 'Write the request made and how it ended (JSON) to FILE' }) as unknown as Argv<ApiArgs>,
  handler: (argv) => withEnding(argv, 'api', (ending) => call(argv, ending)),
}, {
  examples: [
    ['wds-files api GET /members/face_image', 'one raw call, with the token and the limits'],
    [`wds-files api POST /members/delete --data '{"codes":["A0001"]}' --dry-run --wait`, 'check a delete and follow its task; nothing changes'],
  ],
  exits: { 0: 'the service answered 2xx (with --wait: the task ended OK)', 1: 'the service refused the call or was not reached', 3: 'with --wait: the task ended NG or ERROR' },
  env: CONNECTION_ENV,
});

async function call(argv: ApiArgs, ending: Ending): Promise<void> {
  const [rawPath, rawQuery = ''] = argv.path.split('?', 2) as [string, string?];
  const path = rawPath.startsWith(API_PREFIX) ? rawPath.slice(API_PREFIX.length) : rawPath;
  const method = argv.method.toUpperCase();
  const slashed = path.startsWith('/') ? path : `/${path}`;
  const match = findOperation(method, slashed);
  if (match.kind === 'none') throw new UsageError(`${path} is not a path of API v2; paths look like /members, /members/face_image, /sheets/2 or /tasks/12`);
  if (match.kind === 'method') throw new UsageError(`${method} is not allowed on ${path}; it takes ${match.allow.join(', ')}`);
  // As `legacy api` refuses /get_token: the tool issues tokens itself and never prints one.
  if (match.op.kind === 'token') throw new UsageError('/token is called for you on every command (its token is never printed); name the operation you want');
  let body: unknown;
  if (argv.data !== undefined) {
    try {
      body = JSON.parse(argv.data);
    } catch {
      // JSON.parse's message quotes the text, which may hold a password: the place and the rule only.
      throw new UsageError(`--data is not valid JSON: ${jsonProblem(argv.data) ?? 'it does not read as JSON'}`);
    }
  }
  // A secret the user sends (a webhook's secret_token) is masked in every line printed from here on.
  registerSecretsIn(body);
  if (argv['dry-run'] && !match.op.dryRun) throw new UsageError(`${match.op.id} has no dry-run mode`);
  await ending.checkReport();
  const query = Object.fromEntries(new URLSearchParams(rawQuery));
  const record = ending.body as unknown as ApiRecord;
  Object.assign(record, {
    request: { method, path: slashed, operation: match.op.id, query, dry_run: argv['dry-run'], body_bytes: argv.data === undefined ? 0 : Buffer.byteLength(argv.data) },
    outcome: 'failed',
  });
  let connection: Awaited<ReturnType<typeof connect>> | undefined;
  // What the service answers is printed masked unless asked; secrets it names are masked in log lines too.
  const print = (value: unknown): void => {
    registerSecretsIn(value);
    console.log(value === undefined || value === '' ? '' : JSON.stringify(argv['show-secrets'] ? value : redactValue(value), null, 2));
    // The answer is the command's JSON on stdout, as gh api prints it: no summary line beside it.
    ending.printedOwn();
  };
  try {
    connection = await connect(argv);
    const answer = await connection.client.call(match.op.id as never, { params: match.params, query, body, dryRun: argv['dry-run'] });
    record.outcome = 'ok';
    const taskId = (answer as { task_id?: unknown } | undefined)?.task_id;
    if (typeof taskId === 'number') record.task_id = taskId;
    if (argv.wait && typeof taskId === 'number') {
      const task = await connection.client.tasks.wait(taskId);
      record.task = task;
      print(task);
      if (task.status !== 'OK') {
        record.outcome = 'failed';
        process.exitCode = EXIT.partial;
      }
      return;
    }
    print(answer);
  } catch (error) {
    const e = error as { code?: string; status?: number; message?: string };
    record.outcome = e.code === 'UPDATE_OUTCOME_UNKNOWN' ? 'unknown' : 'failed';
    record.error = { code: e.code ?? 'ERROR', ...(e.status ? { status: e.status } : {}), message: String(e.message ?? error) };
    throw error;
  } finally {
    await connection?.close();
    if (connection) {
      record.requests = requestCounts(connection.client.transport.counters);
      ending.counts = { sent: record.requests.sent, retries: record.requests.retries, rate_limited: record.requests.rate_limited };
    }
  }
}

/** What `api --report` writes beside the heading fields: the request (its body's size, not its content) and how it ended. */
interface ApiRecord {
  request: { method: string; path: string; operation: string; query: Record<string, string>; dry_run: boolean; body_bytes: number };
  /** `ok`: answered 2xx; `failed`: refused, not reached, or its task did not end OK; `unknown`: an update whose answer was lost. */
  outcome: 'ok' | 'failed' | 'unknown';
  task_id?: number;
  task?: unknown;
  error?: { code: string; status?: number; message: string };
  requests?: { sent: number; retries: number; rate_limited: number; waited_ms: number };
}
