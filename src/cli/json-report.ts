/**
 * `--report FILE` of the commands that do not run files through the stages (verify, validate,
 * plan, archive list|show|diff|check|forget, legacy api|sheet): the file is checked before any
 * work, as an export's is, and written however the command ends, its secrets masked
 * (DESIGN.md section 3).
 */
import { EXIT } from './exit-codes.js';
import { writeReport } from './output.js';
import { Preflight } from './preflight.js';
import type { Place } from './path-clash.js';
import { redactValue } from '../util/redact.js';

/**
 * What a command puts in its report as it goes. `outcome` is `ok` unless the command says
 * otherwise (`problems`, `interrupted`), and `failed`, with `error`, when it throws.
 */
export type ReportBody = Record<string, unknown> & { outcome?: string };

/**
 * Runs `work` with a report to fill; with `--report`, the file is checked first (`places`: what
 * the command reads or writes, which the report may not be) and written at the end, even when
 * `work` throws, so a command that fails part way still says how far it got.
 */
export async function withJsonReport<T>(
  argv: { report?: string; quiet?: boolean },
  command: string,
  places: Place[],
  work: (report: ReportBody) => Promise<T>,
): Promise<T> {
  const path = argv.report;
  const preflight = new Preflight(argv);
  await preflight.report(path, places);
  const started = new Date();
  const body: ReportBody = {};
  try {
    return await work(body);
  } catch (error) {
    const e = error as { code?: unknown; message?: unknown };
    body.outcome = 'failed';
    body.error = { code: typeof e.code === 'string' ? e.code : error instanceof Error ? error.name : 'ERROR', message: String(e.message ?? error) };
    throw error;
  } finally {
    const { outcome = 'ok', ...rest } = body;
    if (path !== undefined) await writeJsonReport(path, { command, outcome, started_at: started.toISOString(), finished_at: new Date().toISOString(), ...rest });
    await preflight.end();
  }
}

/** A client's requests as the reports of `api` and `legacy api|sheet` give them. */
export function requestCounts(c: { requests: number; retries: number; rateLimited: number; waitedMs: number }): { sent: number; retries: number; rate_limited: number; waited_ms: number } {
  return { sent: c.requests, retries: c.retries, rate_limited: c.rateLimited, waited_ms: c.waitedMs };
}

/** Writes `record` as the report, masked; one that cannot be written is said and makes the exit 1. */
export async function writeJsonReport(path: string, record: object): Promise<void> {
  const problem = await writeReport(path, `${JSON.stringify(redactValue(record), null, 2)}\n`);
  if (!problem) return;
  process.stderr.write(`wds-files: --report ${path} could not be written (${problem})\n`);
  process.exitCode = EXIT.fatal;
}
