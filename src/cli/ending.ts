/**
 * How every command that takes `--report` and `--json` ends, whatever the ending: success, some
 * files with problems (exit 3), a failure before or after the first request, a usage error found
 * once the command started, a stop by SIGINT or SIGTERM (DESIGN.md sections 3 and 8). One path
 * writes the report (once its place was checked) and prints the one JSON line, both headed by the
 * same fields: `command`, `status`, `exit_code`, `started_at`, `finished_at`, `duration_ms` and
 * `counts` (the report says `outcome` where the line says `status`).
 */
import { OUTCOMES, type RunReport } from '../stages/report.js';
import { jsonWithItems } from '../util/json-items.js';
import { redactValue } from '../util/redact.js';
import { UsageError } from './connection.js';
import { EXIT } from './exit-codes.js';
import { exitCodeOf } from './stop-signal.js';
import type { Place } from './path-clash.js';

export interface EndingArgs {
  json?: boolean;
  report?: string;
  quiet?: boolean;
}

/** What the report says of the run as a whole: `ok`, `problems`, `failed` or `interrupted` (api: `unknown`). */
export type Outcome = 'ok' | 'problems' | 'failed' | 'interrupted' | 'unknown';
/**
 * The JSON line's word for it, as `run`, the scheduler and notifications say it. An update whose
 * answer was lost is `unknown`, not `failed`: a wrapper that resends a failed update would apply it twice.
 */
export type Status = 'ok' | 'partial' | 'failed' | 'interrupted' | 'unknown';

const STATUS: Record<Outcome, Status> = { ok: 'ok', problems: 'partial', failed: 'failed', interrupted: 'interrupted', unknown: 'unknown' };

/** What a command puts in its report as it goes; `outcome` is `ok` unless it says otherwise. */
export type ReportBody = Record<string, unknown> & { outcome?: string };

/** The files of a command that runs them through the stages, and the lines it ends with. */
interface FileRun {
  report: RunReport;
  extra: Record<string, unknown>;
  lines: string[];
}

let current: Ending | null = null;

/** The ending of the command under way (one a process). */
export function currentEnding(): Ending {
  if (!current) throw new Error('no command ending was started (withEnding)');
  return current;
}

/**
 * A file command's end: its report (`--report`, each file's outcome), its summary and closing
 * `lines`, said by the command's ending with everything else it says.
 */
export function finishRun(report: RunReport, extra: Record<string, unknown>, lines: string[]): void {
  currentEnding().fileRun(report, extra, lines);
}

export class Ending {
  readonly started = new Date();
  /** The report's own fields, beside the heading ones. */
  readonly body: ReportBody = {};
  /** Counts of what the command went through, by kind; a file command's are its report's. */
  counts: Record<string, number> = {};
  /** What `--json` prints beside the heading fields; null when the command printed its own JSON. */
  private document: Record<string, unknown> | null = {};
  private files: FileRun | null = null;
  /** The report's `items` of a command that runs no files through the stages, read as the report is written. */
  private listed: Iterable<unknown> | null = null;
  private checked = false;
  private error: { code: string; message: string; status?: number; thrown?: unknown } | null = null;
  private preflight: import('./preflight.js').Preflight | null = null;
  /** A command that runs files: its counts are by outcome, and its report lists `items`, even when it failed before the first. */
  private ofFiles = false;

  constructor(readonly command: string, private readonly args: EndingArgs) {}

  /**
   * Checks `--report` before any work (src/cli/preflight.ts): `places` are what the command reads
   * or writes, which the report may not be. From here on the report is written however the
   * command ends; before it, a failure prints its JSON line but writes no report, since the
   * report's place was not known to be safe (it could have been the pipeline file itself).
   */
  async checkReport(places: Place[] = []): Promise<void> {
    if (this.args.report === undefined) return;
    const { Preflight } = await import('./preflight.js');
    this.preflight ??= new Preflight(this.args);
    await this.preflight.report(this.args.report, places);
    this.checked = true;
  }

  /**
   * The command's result for a person: under `--json` `value` is kept for the JSON line, printed
   * at the end with the heading fields; otherwise `lines` are printed now.
   */
  print(value: Record<string, unknown>, lines: () => string[]): void {
    if (this.args.json) this.document = value;
    else for (const line of lines()) console.log(line);
  }

  /** The command printed JSON of its own on stdout (the service's answer, the schema): no JSON line is added. */
  printedOwn(): void {
    this.document = null;
  }

  /** Marks a command that runs files (exports, imports, restore, run): see `ofFiles`. */
  runsFiles(): this {
    this.ofFiles = true;
    this.counts = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, 0]));
    return this;
  }

  /** A file command's report, the fields it adds to the summary, and its closing lines for a person. */
  fileRun(report: RunReport, extra: Record<string, unknown>, lines: string[]): void {
    this.files = { report, extra, lines };
  }

  /**
   * The report's `items`, the last of its keys: read and written a part at a time when the report
   * is written, so that a list kept on disk (verify's) never is in memory whole.
   */
  reportItems(items: Iterable<unknown>): void {
    this.listed = items;
  }

  /** The command failed without throwing (a pipeline run's failure is its summary's). */
  failed(message: string, code = 'ERROR'): void {
    this.error = { code, message };
    this.body.outcome = 'failed';
  }

  /** Says how the command ended: the report written, the JSON line or the closing lines printed, the exit code set. */
  async finish(thrown?: unknown): Promise<void> {
    const finished = new Date();
    if (thrown !== undefined) this.error = errorOf(thrown);
    const files = this.files;
    const interrupted = files?.report.interrupted ?? null;
    const outcome: Outcome = this.error || this.body.outcome === 'failed' ? (this.body.outcome === 'unknown' ? 'unknown' : 'failed')
      : (this.body.outcome as Outcome | undefined) ?? (interrupted ? 'interrupted' : (files?.report.problems ?? 0) > 0 ? 'problems' : 'ok');
    let exitCode = thrown !== undefined ? (thrown instanceof UsageError ? EXIT.usage : EXIT.fatal)
      : process.exitCode !== undefined && process.exitCode !== 0 ? Number(process.exitCode)
        : interrupted ? exitCodeOf(interrupted.signal) : outcome === 'problems' ? EXIT.partial : outcome === 'ok' ? EXIT.ok : EXIT.fatal;
    if (files) this.counts = { ...files.report.counts };
    const times = { started_at: this.started.toISOString(), finished_at: finished.toISOString(), duration_ms: finished.getTime() - this.started.getTime() };
    const error = this.error ? { error: { code: this.error.code, ...(this.error.status ? { status: this.error.status } : {}), message: this.error.message } } : {};

    // A report that cannot be written does not hide what the command did: the line still follows.
    let reportProblem: string | null = null;
    const path = this.args.report;
    if (path !== undefined && this.checked) {
      const head = { command: this.command, outcome, exit_code: exitCode, ...times };
      const { writeReport } = await import('./output.js');
      const items = this.listed ?? (this.ofFiles ? [] : null);
      const own = { ...head, ...(Object.keys(this.counts).length ? { counts: this.counts } : {}), ...this.body, ...head, ...error };
      reportProblem = files?.report.keepsItems
        ? await writeReport(path, files.report.jsonParts({ ...head, ...files.extra, ...head, ...error }, redactValue))
        : await writeReport(path, items ? jsonWithItems(own, items, redactValue) : `${JSON.stringify(redactValue(own), null, 2)}\n`);
      if (reportProblem) exitCode = EXIT.fatal;
    }
    await this.preflight?.end();

    if (this.args.json) {
      if (this.document !== null || this.error) {
        const head = { command: this.command, status: reportProblem ? 'failed' : STATUS[outcome], exit_code: exitCode, ...times };
        const own = files ? files.report.summary(files.extra) : this.document ?? {};
        const line = {
          ...head, counts: this.counts, ...own, ...head,
          ...(this.error ? { error: this.error.message, error_code: this.error.code } : {}),
        };
        process.stdout.write(`${JSON.stringify(redactValue(line))}\n`);
      }
    } else if (files && !this.error) {
      const { summaryLines } = await import('./output.js');
      for (const line of summaryLines(files.report, files.lines)) console.log(line);
    }
    if (interrupted) {
      const { interruptedLine } = await import('./output.js');
      const line = interruptedLine(files!.report);
      // With --json, stdout holds the summary alone, and the line goes to stderr.
      if (this.args.json) process.stderr.write(`${line}\n`);
      else console.log(line);
    }
    if (reportProblem) process.stderr.write(`wds-files: --report ${path} could not be written (${reportProblem}); what the run did is in the summary above\n`);
    process.exitCode = exitCode;
  }
}

/** A client's requests as the reports of `api` and `legacy api|sheet` give them. */
export function requestCounts(c: { requests: number; retries: number; rateLimited: number; waitedMs: number }): { sent: number; retries: number; rate_limited: number; waited_ms: number } {
  return { sent: c.requests, retries: c.retries, rate_limited: c.rateLimited, waited_ms: c.waitedMs };
}

/** An error as the report and the JSON line give it: its stable code (a usage error's `USAGE`), status and message. */
function errorOf(thrown: unknown): { code: string; message: string; status?: number; thrown: unknown } {
  const e = thrown as { code?: unknown; status?: unknown; message?: unknown };
  const code = thrown instanceof UsageError ? 'USAGE' : typeof e.code === 'string' ? e.code : thrown instanceof Error ? thrown.name : 'ERROR';
  return { code, message: String(e.message ?? thrown), ...(typeof e.status === 'number' ? { status: e.status } : {}), thrown };
}

/**
 * Runs a command's work and then ends it through {@link Ending.finish}, however the work ends. A
 * thrown error is rethrown once the report and the JSON line are out, for main.ts to say it and
 * exit with its code (2 for a usage error, 1 otherwise).
 */
export async function withEnding(args: EndingArgs, command: string, work: (ending: Ending) => Promise<void>): Promise<void> {
  const ending = (current = new Ending(command, args));
  let thrown: unknown;
  let failed = false;
  try {
    await work(ending);
  } catch (error) {
    thrown = error;
    failed = true;
  }
  await ending.finish(failed ? thrown : undefined);
  if (failed) throw thrown;
}
