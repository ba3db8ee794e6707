/** The answer of an update (operations 3, 4, 6, 7, 9, 10, 15, 16): a queued task or a dry run's verdict. */
import { dryRunAnswerSchema, updateAnswerSchema } from './schemas.js';
import type { LegacyTransport } from './transport.js';
import type { LegacyUpdate, LegacyUpdateOptions } from './types.js';

export async function postUpdate(transport: LegacyTransport, path: string, body: unknown, options: LegacyUpdateOptions = {}): Promise<LegacyUpdate> {
  const dryRun = options.dryRun ?? transport.options.dryRun;
  const call = { body, dryRun, kind: 'update' as const, signal: options.signal };
  if (dryRun) {
    const verdict = await transport.postParsed(path, dryRunAnswerSchema, call);
    return { dryRun: true, status: verdict.status === 'OK' && verdict.errors.length === 0 ? 'OK' : 'NG', errors: verdict.errors };
  }
  const queued = await transport.postParsed(path, updateAnswerSchema, call);
  return { dryRun: false, progressId: queued.progress_id, status: queued.status };
}
