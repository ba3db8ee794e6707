/** The legacy client's own error: everything else it throws is one of `WdsClient`'s errors. */
import { WdsError } from '../errors.js';

/**
 * The asynchronous read was refused (`NG`): the sheet does not exist, the progress id is unknown
 * or expired, or it was issued for another sheet.
 */
export class LegacyAsyncReadError extends WdsError {
  /** The sheet that was read. */
  readonly sheetId: number;
  constructor(sheetId: number, message: string, details: { method?: string; path?: string } = {}) {
    super('TASK_FAILED', `the asynchronous read of sheet ${sheetId} was refused: ${message}`, { ...details, errors: [message] });
    this.name = 'LegacyAsyncReadError';
    this.sheetId = sheetId;
  }
}
