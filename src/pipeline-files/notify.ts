/**
 * `notify: {url, on}`: the run summary POSTed as JSON when the run ends as `on` says. A
 * notification that cannot be delivered is logged and the run keeps its own outcome: an alert
 * channel that is down must not turn a good backup into a failed one.
 */
import { redact, redactUrl, redactValue } from '../util/redact.js';
import type { LoadedPipeline } from './load.js';
import type { PipelineRunSummary } from './run.js';

/** How long a receiver has to answer. */
export const NOTIFY_TIMEOUT_MS = 10_000;

/** Which `on` value a run's status answers to; a run stopped before its end counts as a failure. */
export const notifyEventOf = (status: PipelineRunSummary['status']): 'success' | 'partial' | 'failure' =>
  status === 'ok' ? 'success' : status === 'partial' ? 'partial' : 'failure';

/** Sends the summary if the pipeline asks for it; true when it was delivered. Never throws. */
export async function notifyRun(pipeline: LoadedPipeline, summary: PipelineRunSummary, log: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): Promise<boolean> {
  const notify = pipeline.notify;
  if (!notify || !notify.on.includes(notifyEventOf(summary.status))) return false;
  // A webhook URL often carries its own secret in the path or the query: logs show only where it goes.
  const shown = redactUrl(notify.url, { path: 'hide' });
  const { target, authorization } = splitCredentials(notify.url);
  try {
    const answer = await fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'wds-files', ...(authorization ? { authorization } : {}) },
      body: JSON.stringify(redactValue({ event: notifyEventOf(summary.status), ...summary })),
      signal: AbortSignal.timeout(NOTIFY_TIMEOUT_MS),
    });
    await answer.body?.cancel();
    if (!answer.ok) {
      log(`${pipeline.name}: the notification to ${shown} was answered ${answer.status}; the run's outcome stands`);
      return false;
    }
    return true;
  } catch (error) {
    const cause = (error as Error & { cause?: Error }).cause?.message ?? (error as Error).message;
    // fetch's own messages may quote the address whole.
    const said = cause.split(notify.url).join(shown).split(target).join(shown);
    log(`${pipeline.name}: the notification to ${shown} could not be sent (${redact(said)}); the run's outcome stands`);
    return false;
  }
}

/** A URL's user or password as typed: a stray `%` that is no escape is kept as it is. */
function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/**
 * `https://user:password@host/...` as curl sends it: the URL without its user part, and the user
 * part as Basic authorization. fetch refuses a URL with credentials, and its refusal quotes it.
 */
function splitCredentials(url: string): { target: string; authorization?: string } {
  const parsed = new URL(url);
  if (!parsed.username && !parsed.password) return { target: url };
  const user = `${decoded(parsed.username)}:${decoded(parsed.password)}`;
  parsed.username = '';
  parsed.password = '';
  return { target: parsed.href, authorization: `Basic ${Buffer.from(user).toString('base64')}` };
}
