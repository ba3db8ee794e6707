/**
 * `wds-files legacy api <PATH>`: the twin of `api` for the legacy interface. POSTs the body to
 * `{base}/api/{version}{PATH}` with the token and the limits, prints the answer with its secrets
 * masked (user passwords, tokens) unless `--show-secrets`, and with `--wait` follows an update's
 * progress_id to its final status. An answer or a final task that says NG or ERROR exits 3.
 */
import { EXIT } from '../exit-codes.js';
import { UpdateOutcomeUnknownError, isUpdateOutcomeUnknownError } from '../../client/errors.js';
import { REDACTED, redact, registerSecretsIn } from '../../util/redact.js';
import type { LegacyOperation, LegacyVersion } from '../../client/v1/operation-kinds.js';
import { stopSignal, stoppedBy, exitCodeOf } from '../stop-signal.js';
import { connectLegacy } from './legacy-connection.js';
import { requestCounts, withEnding } from '../ending.js';
import type { LegacyApiArgs } from './legacy-args.js';

/** Fields whose text is a secret; `password_locked` and `password_modified_at` are not. */
const SECRET_FIELD = /^(?:password|secret_token|access_token|consumer_secret)$/i;

/**
 * The answer with its secret fields masked, and any secret the process knows masked wherever it
 * appears. The labels under `headers` name fields; they are not values, and stay readable.
 */
function masked(value: unknown, key = ''): unknown {
  if (typeof value === 'string') return SECRET_FIELD.test(key) ? REDACTED : redact(value);
  if (Array.isArray(value)) return value.map((v) => masked(v));
  if (!value || typeof value !== 'object') return value;
  if (key === 'headers') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, typeof v === 'string' ? redact(v) : masked(v)]));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, masked(v, k)]));
}

const failed = (value: unknown): boolean => {
  const status = (value as { status?: unknown } | null)?.status;
  return status === 'NG' || status === 'ERROR';
};

export async function runLegacyApi(argv: LegacyApiArgs, call: { op: LegacyOperation; path: string; version: LegacyVersion; body: unknown }): Promise<void> {
  // A secret the user sends (a user's password) is masked in every line printed from here on.
  registerSecretsIn(call.body);
  // As `api --report`: the request (its body's size, not its content) and how it ended.
  await withEnding(argv, 'legacy api', async (ending) => {
    await ending.checkReport();
    const report = ending.body;
    report.request = { version: call.version, path: call.path, operation: `${call.op.number} ${call.op.name}`, dry_run: argv['dry-run'], body_bytes: argv.data === undefined ? 0 : Buffer.byteLength(argv.data) };
    const print = (value: unknown): void => {
      // The labels are left out: `headers.password` is the label "Password", not a secret to hunt for.
      registerSecretsIn(value && typeof value === 'object' && !Array.isArray(value) ? { ...value, headers: undefined } : value);
      console.log(JSON.stringify(argv['show-secrets'] ? value : masked(value), null, 2));
      // The answer is the command's JSON on stdout: no summary line beside it.
      ending.printedOwn();
      if (failed(value)) {
        process.exitCode = EXIT.partial;
        report.outcome = 'failed';
      }
    };
    const signal = stopSignal();
    const connection = await connectLegacy(argv, { version: call.version, signal });
    let progressId: number | string | undefined;
    try {
      const answer = await connection.client.request(call.path, call.body, { dryRun: argv['dry-run'] });
      const status = (answer.body as { status?: unknown } | null)?.status;
      if (typeof status === 'string') report.status = status;
      const id = (answer.body as { progress_id?: unknown } | null)?.progress_id;
      if (typeof id === 'number' || typeof id === 'string') report.progress_id = id;
      if (argv.wait && (typeof id === 'number' || typeof id === 'string')) {
        progressId = id;
        const task = await connection.client.tasks.wait(id, { signal });
        // As the service writes a task, the same as `legacy api /task/ID` prints it.
        const shown = { progress_id: task.progressId, status: task.status, ...(task.errors.length ? { errors: task.errors } : {}) };
        report.task = masked(shown);
        print(shown);
        const ending = taskEnding(task);
        if (ending) process.stderr.write(`wds-files: ${redact(ending)}\n`);
        return;
      }
      print(answer.body);
    } catch (error) {
      const stopped = stoppedBy(signal);
      if (!stopped && isUpdateOutcomeUnknownError(error)) {
        // As `api` says it: not `failed`, which a wrapper would take as safe to send again.
        report.outcome = 'unknown';
        const details = { method: error.method, path: error.path, status: error.status, errors: error.errors, cause: error.cause };
        throw new UpdateOutcomeUnknownError(details, lostUpdateCheck(call.path));
      }
      if (!stopped) throw error;
      const note = stopNote(call, progressId);
      report.outcome = 'interrupted';
      report.interrupted = { signal: stopped, ...(note ? { note: note.slice(2) } : {}) };
      process.stderr.write(`wds-files: stopped by ${stopped}${note}\n`);
      process.exitCode = exitCodeOf(stopped);
    } finally {
      const requests = requestCounts(connection.client.transport.counters);
      report.requests = requests;
      ending.counts = { sent: requests.sent, retries: requests.retries, rate_limited: requests.rate_limited };
      await connection.close();
    }
  });
}

/** A line for a person when a followed task did not end OK (stdout holds the task as JSON). */
function taskEnding(task: { progressId: number | string; status: string; errors: string[] }): string | null {
  const said = task.errors.length ? `: ${task.errors.join('; ')}` : '';
  if (task.status === 'NG') return `task ${task.progressId} ended NG, the update was refused${said}`;
  if (task.status !== 'ERROR') return null;
  // The service's ERROR is a failure of its own, which it asks to be reported to its support.
  return `task ${task.progressId} ended ERROR, an unexpected failure at the service${said}; read the data before sending the update again, and report it to the service's support if it happens again`;
}

/**
 * How to find out whether an update whose answer was lost was applied: its progress_id was in the
 * lost answer, so the data read back, or the task when its progress_id is known some other way.
 */
function lostUpdateCheck(path: string): string {
  const read = path.replace(/\/(?:data\/)?(?:add|overwrite|update|delete)\/?$/, '');
  return `The update may or may not have been applied, and must not be sent again blindly: read the data back first ` +
    `(wds-files legacy api ${read}), or follow its task with wds-files legacy api /task/PROGRESS_ID if its progress_id is known`;
}

/** What a stop leaves at the service: an update may have been taken, and goes on there. */
function stopNote(call: { op: LegacyOperation; path: string }, progressId: number | string | undefined): string {
  if (call.op.kind !== 'update') return '';
  if (progressId !== undefined) return `; the update goes on at the service: follow it with wds-files legacy api /task/${progressId}`;
  return `; the update may have reached the service: read the data before sending ${call.path} again`;
}
