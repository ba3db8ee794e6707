/**
 * Sheets (operations 8 to 10, 15, 16) and the asynchronous read (12 to 14) of the legacy
 * interface. Sheet 0 is the base information; partial delete on it deletes members.
 */
import { OptionsError } from '../errors.js';
import { LegacyAsyncReadError } from './errors.js';
import { PollPacer } from './polling.js';
import { postUpdate } from './updates.js';
import {
  presetAnswerSchema, progressAnswerSchema, resultAnswerSchema, sheetDataSchema,
  type LegacySheetData, type LegacySheetRecord, type PresetJob,
} from './schemas.js';
import type { LegacyTransport } from './transport.js';
import type {
  LegacyAsyncProgress, LegacyAsyncResult, LegacyAsyncSheet, LegacyPreset, LegacyReadAsyncOptions, LegacyReadOptions, LegacyUpdate, LegacyUpdateOptions,
} from './types.js';

function sheetPath(sheetId: number): string {
  if (!Number.isSafeInteger(sheetId) || sheetId < 0) {
    throw new OptionsError(`a sheet id is a whole number of 0 or more (0 is the base information); got ${JSON.stringify(sheetId)}`);
  }
  return `sheet/${sheetId}`;
}

function progressPart(progressId: string): string {
  if (typeof progressId !== 'string' || progressId === '') throw new OptionsError('a progress id must be the non-empty string that preset answered');
  return encodeURIComponent(progressId);
}

/** Sheets and the members' rows in them. Reach it as `legacyClient.sheets`. */
export class LegacySheets {
  /** @internal */
  constructor(private readonly transport: LegacyTransport) {}

  /**
   * Every member's row of a sheet (operation 8). A large sheet may time out (TimeoutError, or a
   * ServerError of status 504; `isLegacyTimeout` tells either): read it with `readAsync` then.
   */
  async get(sheetId: number, options: LegacyReadOptions = {}): Promise<LegacySheetData> {
    return this.transport.postParsed(sheetPath(sheetId), sheetDataSchema, { signal: options.signal }) as Promise<LegacySheetData>;
  }

  /** Replaces the sheet's data of all members with `data` (operation 9): what it lacks is deleted. */
  overwrite(sheetId: number, data: LegacySheetRecord[], options?: LegacyUpdateOptions): Promise<LegacyUpdate> {
    return postUpdate(this.transport, `${sheetPath(sheetId)}/data/overwrite`, { data }, options);
  }

  /** Adds rows to the sheet (operation 10). */
  add(sheetId: number, data: LegacySheetRecord[], options?: LegacyUpdateOptions): Promise<LegacyUpdate> {
    return postUpdate(this.transport, `${sheetPath(sheetId)}/data/add`, { data }, options);
  }

  /** Changes the rows of the members in `data` only (operation 15, version v1.2). */
  update(sheetId: number, data: LegacySheetRecord[], options?: LegacyUpdateOptions): Promise<LegacyUpdate> {
    return postUpdate(this.transport, `${sheetPath(sheetId)}/data/update`, { data }, options);
  }

  /**
   * Deletes the members' data (operation 16, version v1.2): on sheet 0 the members themselves, on
   * another sheet only their rows of it.
   */
  delete(sheetId: number, memberCodes: string[], options?: LegacyUpdateOptions): Promise<LegacyUpdate> {
    return postUpdate(this.transport, `${sheetPath(sheetId)}/data/delete`, { data: memberCodes.map((member_code) => ({ member_code })) }, options);
  }

  /**
   * Starts an asynchronous read of the sheet (operation 12, version v1.1) and answers its progress
   * id. Throws LegacyAsyncReadError when the service refuses it (an unknown sheet).
   */
  async preset(sheetId: number, options: LegacyReadOptions = {}): Promise<LegacyPreset> {
    const path = `${sheetPath(sheetId)}/preset`;
    const answer = await this.transport.postParsed(path, presetAnswerSchema, { signal: options.signal });
    const job = 'data' in answer && answer.data && typeof answer.data === 'object' ? (answer.data as PresetJob) : (answer as PresetJob);
    const id = job.progress_id;
    if (id === null || id === undefined || job.status === 'NG') {
      throw new LegacyAsyncReadError(sheetId, job.message || 'the service answered NG without a progress id', { method: 'POST', path });
    }
    return { progressId: String(id) };
  }

  /** The asynchronous read's progress (operation 13): WAITING, RUNNING, OK, or NG with a message. */
  async progress(sheetId: number, progressId: string, options: LegacyReadOptions = {}): Promise<LegacyAsyncProgress> {
    const path = `${sheetPath(sheetId)}/task/${progressPart(progressId)}`;
    const answer = await this.transport.postParsed(path, progressAnswerSchema, { signal: options.signal });
    return { status: answer.status, message: answer.message ?? '' };
  }

  /**
   * The asynchronous read's result (operation 14): the headers and records once it is ready, else
   * its state and a message (NG for an unknown progress id or one issued for another sheet).
   */
  async result(sheetId: number, progressId: string, options: LegacyReadOptions = {}): Promise<LegacyAsyncResult> {
    const path = `${sheetPath(sheetId)}/get/${progressPart(progressId)}`;
    const answer = await this.transport.postParsed(path, resultAnswerSchema, { signal: options.signal });
    if (answer.status === 'OK' && 'data' in answer && answer.data) {
      const data = answer.data as LegacyAsyncSheet;
      return { status: 'OK', headers: data.headers, records: data.records };
    }
    const message = typeof answer.message === 'string' ? answer.message : '';
    const status = answer.status === 'WAITING' || answer.status === 'RUNNING' ? answer.status : 'NG';
    return { status, message };
  }

  /**
   * Reads a sheet the asynchronous way: starts the job (12), polls its progress (13) one request
   * per poll, paced by the client's `poll` option and said through `onWait`, then fetches the
   * result (14). Throws LegacyAsyncReadError when the service answers NG or ERROR.
   */
  async readAsync(sheetId: number, options: LegacyReadAsyncOptions = {}): Promise<LegacyAsyncSheet> {
    const signal = this.transport.signal(options.signal);
    const { progressId } = await this.preset(sheetId, { signal });
    const pacer = new PollPacer(this.transport, `the asynchronous read of sheet ${sheetId}`);
    for (;;) {
      await pacer.wait(signal);
      const { status, message } = await this.progress(sheetId, progressId, { signal });
      options.onPoll?.(status, message);
      if (status === 'NG' || status === 'ERROR') throw new LegacyAsyncReadError(sheetId, message || status);
      if (status !== 'OK') continue;
      const result = await this.result(sheetId, progressId, { signal });
      if (result.status === 'OK') return { headers: result.headers, records: result.records };
      // Ready by 13 but not by 14 (a service whose two answers lag): keep polling the result.
      if (result.status === 'NG') throw new LegacyAsyncReadError(sheetId, result.message || 'NG');
      options.onPoll?.(result.status, result.message);
    }
  }
}
