/**
 * The answers of the legacy interface (api-v1-legacy.md; wire-format.md "Legacy v1.x"), as zod
 * schemas and the types read from them. Objects are loose: the real service adds fields the
 * document does not list, and a client that refused them would stop working for no gain. Where the
 * document or the real clients show two forms (a progress id as a number or a string, a flag as a
 * boolean or the dash placeholder), both are accepted.
 */
import { z } from 'zod';
import { redact } from '../../util/redact.js';

/** A progress id: an integer in update answers, a string in the asynchronous read's. */
export const progressIdSchema = z.union([z.number().int(), z.string().min(1)]);

/** WAITING or RUNNING, then OK, NG (refused, with `errors`) or ERROR (failed; support is needed). */
export type LegacyTaskStatus = 'WAITING' | 'RUNNING' | 'OK' | 'NG' | 'ERROR';
const statusSchema = z.enum(['WAITING', 'RUNNING', 'OK', 'NG', 'ERROR']);

/** Field name to display label. */
const headersSchema = z.record(z.string(), z.string());
/**
 * The service's `errors`: strings (anything else kept as its JSON), redacted, since a service may
 * quote a refused value, a password say, and callers print them.
 */
const errorsSchema = z
  .array(z.unknown())
  .transform((list) => list.map((e) => redact(typeof e === 'string' ? e : JSON.stringify(e))));
/** A flag as read: a boolean, or what a form sent (`"-"`, `"0"`, `1`). */
const flagSchema = z.union([z.boolean(), z.string(), z.number(), z.null()]);
/** A text that the real service may leave out or send as null. */
const text = z.union([z.string(), z.null()]).optional();

export const tokenAnswerSchema = z.looseObject({
  access_token: z.string().min(1),
  /** Seconds, as a string in the document (`"3600"`); a number is taken too. */
  expires_in: z.union([z.string(), z.number()]).optional(),
});

export const userSchema = z.looseObject({
  email: text,
  /** Always `****` in reads. */
  password: text,
  member_code: text,
  name: text,
  type: text,
  role: text,
  is_active: flagSchema.optional(),
  password_locked: flagSchema.optional(),
  use_smartphone: flagSchema.optional(),
  use_secure: flagSchema.optional(),
  created_at: text,
  last_logined_at: text,
  password_modified_at: text,
  last_modified_by: text,
  last_modified_at: text,
});
/** A flag as read: a boolean, or the text or number a form sent (`"-"`, `"0"`, `1`). */
export type LegacyFlag = boolean | string | number | null;

/** A user account as read through operation 2 (password masked as `****`). Fields may be missing or null. */
export interface LegacyUser {
  /** The login id. */
  email?: string | null;
  /** Always `****`. */
  password?: string | null;
  /** The employee number. */
  member_code?: string | null;
  /** The full name. */
  name?: string | null;
  /** The account type (`Adm` for an administrator). */
  type?: string | null;
  /** The role's name. */
  role?: string | null;
  /** Enabled (true) or disabled (false). */
  is_active?: LegacyFlag;
  /** Whether the password can be locked. */
  password_locked?: LegacyFlag;
  /** Whether the smartphone option is on. */
  use_smartphone?: LegacyFlag;
  /** Whether secure access is on. */
  use_secure?: LegacyFlag;
  /** When the account was created, `YYYY-MM-DD HH:MM:SS`. */
  created_at?: string | null;
  /** The last login, `YYYY-MM-DD HH:MM:SS`. */
  last_logined_at?: string | null;
  /** When the password last changed. */
  password_modified_at?: string | null;
  /** Who last changed the account. */
  last_modified_by?: string | null;
  /** When the account last changed, `YYYY/MM/DD HH:MM:SS`. */
  last_modified_at?: string | null;
  /** Fields the document does not list, as the service sent them. */
  [field: string]: unknown;
}

export const userListSchema = z.looseObject({
  headers: headersSchema.default({}),
  users: z.array(userSchema).default([]),
});
/** Operation 2's answer: the users, and the label of each field. */
export interface LegacyUserList {
  /** Field name to display label. */
  headers: Record<string, string>;
  /** Every user account. */
  users: LegacyUser[];
}

export const departmentSchema = z.looseObject({
  leader_member_code: text,
  leader_member_name: text,
  memo: text,
}).catchall(z.union([z.string(), z.number(), z.null()]));
/**
 * A department: `department_code1`, `department_name1`, `department_code2`, ... for each level of
 * its path, root first, then its leader and a memo.
 */
export interface LegacyDepartment {
  /** The code and name of each level, `department_code1`, `department_name1`, and so on. */
  [level: `department_code${number}` | `department_name${number}`]: string | undefined;
  /** The leader's employee number. */
  leader_member_code?: string | null;
  /** The leader's name. */
  leader_member_name?: string | null;
  /** A note; `""` or null when there is none. */
  memo?: string | null;
}

export const departmentListSchema = z.looseObject({
  status: z.string().default('OK'),
  departments: z.array(departmentSchema).default([]),
});
/** Operation 5's answer. */
export interface LegacyDepartmentList {
  /** `OK`. */
  status: string;
  /** Every department. */
  departments: LegacyDepartment[];
}

export const sheetRecordSchema = z.looseObject({
  member_code: z.union([z.string(), z.number()]).transform(String),
  member_name: text,
  last_modified_by: text,
  last_modified_at: text,
});
/**
 * One member's row of a sheet: `member_code`, `member_name`, the sheet's fields as
 * `definition_<column id>` (sheet 0: the base information's own names), and who changed it when.
 */
export interface LegacySheetRecord {
  /** The employee number: the key of the row; it cannot be changed through the legacy interface. */
  member_code: string;
  /** The member's name. */
  member_name?: string | null;
  /** Each field, `definition_<column id>` or a base information field; dates as `YYYY/MM/DD`. */
  [field: string]: unknown;
}

export const sheetDataSchema = z.looseObject({
  status: z.string().default('OK'),
  data: z.array(sheetRecordSchema).default([]),
});
/** Operation 8's answer: every member's row of one sheet. */
export interface LegacySheetData {
  /** `OK`. */
  status: string;
  /** One row per member. */
  data: LegacySheetRecord[];
}

/** An update's answer: `{"progress_id", "status"}`. */
export const updateAnswerSchema = z.looseObject({
  progress_id: progressIdSchema,
  status: z.string().default('WAITING'),
});
/** An update's answer in dry-run: whether it has errors, and which. */
export const dryRunAnswerSchema = z.looseObject({
  status: z.string(),
  errors: errorsSchema.default([]),
});

export const taskSchema = z.looseObject({
  progress_id: progressIdSchema,
  status: statusSchema,
  errors: errorsSchema.optional(),
});

/**
 * Operation 12's answer: `{"data": {"progress_id", "status"}}`, the id null with status NG and a
 * message when refused; an answer without `data` is taken too.
 */
const presetJobSchema = z.looseObject({
  progress_id: z.union([progressIdSchema, z.null()]).optional(),
  status: z.string().optional(),
  message: z.union([z.string(), z.null()]).optional(),
});
export const presetAnswerSchema = z.union([z.looseObject({ data: presetJobSchema }), presetJobSchema]);
export type PresetJob = z.output<typeof presetJobSchema>;

export const progressAnswerSchema = z.looseObject({
  status: z.string(),
  message: z.union([z.string(), z.null()]).optional(),
});

export const resultAnswerSchema = z.union([
  z.looseObject({
    status: z.literal('OK'),
    data: z.looseObject({ headers: headersSchema.default({}), records: z.array(sheetRecordSchema).default([]) }),
  }),
  z.looseObject({ status: z.string(), message: z.union([z.string(), z.null()]).optional() }),
]);
