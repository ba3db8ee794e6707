/**
 * What the legacy client's methods take and answer, beside the shapes read from the service
 * (schemas.ts).
 */
import type { LegacySheetRecord, LegacyTaskStatus } from './schemas.js';

/**
 * An update's answer: the task the service queued (follow it with `tasks.wait`), or, in dry-run,
 * the verdict of its checks with nothing changed. Tell them apart by `dryRun`.
 */
export type LegacyUpdate =
  | {
      /** Not a dry run: the update was queued. */
      dryRun: false;
      /** The task's id, for `tasks.get` and `tasks.wait`: an integer, or a string on some services. */
      progressId: number | string;
      /** The task's state when it was queued, usually `WAITING`. */
      status: string;
    }
  | {
      /** A dry run: nothing was changed. */
      dryRun: true;
      /** `OK` when the update would be accepted, `NG` when it has errors. */
      status: 'OK' | 'NG';
      /** Why it would be refused (empty when `OK`). */
      errors: string[];
    };

/** Options of an update method. */
export interface LegacyUpdateOptions {
  /** Check only, change nothing: overrides the client's `dryRun` for this call. */
  dryRun?: boolean;
  /** Stops the call, and its waits. */
  signal?: AbortSignal;
}

/** Options of a read. */
export interface LegacyReadOptions {
  /** Stops the call, and its waits. */
  signal?: AbortSignal;
}

/** A task (operation 11) as it is now. */
export interface LegacyTask {
  /** The task's id, as the update answered it. */
  progressId: number | string;
  /** WAITING or RUNNING, then OK, NG or ERROR. */
  status: LegacyTaskStatus;
  /** Why it ended NG or ERROR, as the service said (empty otherwise). */
  errors: string[];
}

/** Options of `tasks.wait`. */
export interface LegacyTaskWaitOptions {
  /** Stops waiting. */
  signal?: AbortSignal;
  /** Called on every poll with the task as it is. */
  onPoll?: (task: LegacyTask) => void;
  /** Give up with a TimeoutError after this long, in milliseconds. Default 3,600,000 (an hour). */
  timeoutMs?: number;
}

/** A user account to write with operations 3 and 4. A flag may be `"-"`: leave it as it is. */
export interface LegacyUserInput {
  /** The login id. */
  email: string;
  /** The password; never shown in logs or errors. */
  password?: string;
  /** The employee number. */
  member_code?: string;
  /** The full name (the service may take it from the member the account is linked to instead). */
  name?: string;
  /** The account type (`Adm` for an administrator). */
  type?: string;
  /** The role's name. */
  role?: string;
  /** Enabled (true) or disabled (false). */
  is_active?: boolean | '-';
  /** Whether the password can be locked. */
  password_locked?: boolean | '-';
  /** Whether the smartphone option is on. */
  use_smartphone?: boolean | '-';
  /** Whether secure access is on. */
  use_secure?: boolean | '-';
  /** When the account was created (operation 4 only), `YYYY-MM-DD HH:MM:SS`. */
  created_at?: string;
}

/** The asynchronous read's answer (operation 14) once the sheet is ready. */
export interface LegacyAsyncSheet {
  /** Field name to display label, `member_kana` included. */
  headers: Record<string, string>;
  /** One row per member. */
  records: LegacySheetRecord[];
}

/** Operation 14's answer once the sheet is ready. */
export interface LegacyAsyncReady extends LegacyAsyncSheet {
  /** Ready. */
  status: 'OK';
}

/** An asynchronous read's state and message (operations 13 and 14 before the sheet is ready). */
export interface LegacyAsyncProgress {
  /** WAITING or RUNNING; OK when ready; NG when refused (an unknown progress id, another sheet). */
  status: string;
  /** What the service said. */
  message: string;
}

/** Operation 14's answer before the sheet is ready, or when the read is refused. */
export interface LegacyAsyncPending extends LegacyAsyncProgress {
  /** WAITING or RUNNING: not ready yet; NG: refused (an unknown progress id, another sheet). */
  status: 'RUNNING' | 'WAITING' | 'NG';
}

/** Operation 14's answer: the sheet when ready, else the job's state and a message. */
export type LegacyAsyncResult = LegacyAsyncReady | LegacyAsyncPending;

/** Operation 12's answer: the id of the job that builds the sheet. */
export interface LegacyPreset {
  /** The id to give `progress` and `result`. */
  progressId: string;
}

/** Options of `sheets.readAsync`. */
export interface LegacyReadAsyncOptions {
  /** Stops the read, and its waits. */
  signal?: AbortSignal;
  /** Called after each poll of the job's progress with its state and message. */
  onPoll?: (status: string, message: string) => void;
}

/** Options of `request`. */
export interface LegacyRequestOptions {
  /** Send `dryrun: 1`: overrides the client's `dryRun` for this call. */
  dryRun?: boolean;
  /** Stops the call, and its waits. */
  signal?: AbortSignal;
}

/** The raw answer of `request`: the HTTP status and the JSON body. */
export interface LegacyRawAnswer {
  /** The HTTP status, 2xx (others throw an `ApiError`). */
  status: number;
  /** The body, parsed from JSON (text when it was not JSON). */
  body: unknown;
}
