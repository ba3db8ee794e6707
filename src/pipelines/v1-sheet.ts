/**
 * A whole sheet through the legacy interface: operation 8 answers every member's records at once;
 * on a timeout, or when asked, the asynchronous read (12, then 13 polled, then 14) is used instead.
 *
 * Operation 8 answers no `headers`. The labels of the CSV's first row come from a dry-run read of
 * the same sheet, which answers the header part only: one small request, sent first, so that a
 * sheet that does not exist is known before the large read. The asynchronous result carries its
 * own `headers`, so that path needs no extra request.
 */
import { isLegacyTimeout, type LegacyClient } from '../client/v1/index.js';
import type { SheetRecord } from '../sinks/sheet-formats.js';

/** The part of LegacyClient a sheet download uses. */
export type SheetReader = Pick<LegacyClient, 'sheets' | 'request'>;

export interface SheetDownloadOptions {
  /** Go straight to the asynchronous read. */
  async: boolean;
  /** Whether the version in use has the asynchronous read (v1.1 on); without it a timeout is final. */
  asyncAvailable: boolean;
  signal?: AbortSignal;
  /** The direct read timed out and the asynchronous read takes over. */
  onFallback?: (error: Error) => void;
  onPoll?: (status: string, message: string) => void;
}

export interface SheetDownload {
  headers: Record<string, string>;
  records: SheetRecord[];
  /** Which read gave the records. */
  via: 'direct' | 'async';
}

export async function downloadSheet(client: SheetReader, sheetId: number, options: SheetDownloadOptions): Promise<SheetDownload> {
  const viaAsync = async (): Promise<SheetDownload> => {
    const { headers, records } = await client.sheets.readAsync(sheetId, { signal: options.signal, onPoll: options.onPoll });
    return { headers, records, via: 'async' };
  };
  if (options.async) return viaAsync();
  const headers = await headersOf(client, sheetId);
  options.signal?.throwIfAborted();
  try {
    const { data } = await client.sheets.get(sheetId);
    return { headers, records: data, via: 'direct' };
  } catch (error) {
    if (!isLegacyTimeout(error) || !options.asyncAvailable || options.signal?.aborted) throw error;
    options.onFallback?.(error as Error);
    return viaAsync();
  }
}

/** The sheet's labels, from a dry-run read: `{"status": "OK", "headers": {...}}`. */
async function headersOf(client: SheetReader, sheetId: number): Promise<Record<string, string>> {
  const { body } = await client.request(`/sheet/${sheetId}`, {}, { dryRun: true });
  const headers = (body as { headers?: unknown } | null)?.headers;
  if (!headers || typeof headers !== 'object' || Array.isArray(headers)) {
    throw new Error(`the header part of sheet ${sheetId} came back without its labels (answer: ${JSON.stringify(body).slice(0, 200)})`);
  }
  return Object.fromEntries(Object.entries(headers).map(([key, label]) => [key, String(label)]));
}
