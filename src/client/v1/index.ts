/** The legacy interface's client (issue 18): what the package root and the CLI use. */
export { LegacyClient, isLegacyTimeout } from './client.js';
export { LegacyAsyncReadError } from './errors.js';
export { LEGACY_REQUESTS_PER_HOUR, LEGACY_TOKENS_PER_HOUR } from './options.js';
export type { LegacyClientOptions, LegacyClientLimits, LegacyPollOptions, LegacyWaitEvent, LegacyWaitReason } from './options.js';
export type { LegacyVersion } from './operations.js';
export type { LegacyUsers, LegacyDepartments } from './resources.js';
export type { LegacySheets } from './sheets.js';
export type { LegacyTasks } from './tasks.js';
export type {
  LegacyDepartment, LegacyDepartmentList, LegacyFlag, LegacySheetData, LegacySheetRecord, LegacyTaskStatus, LegacyUser, LegacyUserList,
} from './schemas.js';
export type {
  LegacyAsyncProgress, LegacyAsyncReady, LegacyAsyncPending, LegacyAsyncResult, LegacyAsyncSheet, LegacyPreset, LegacyRawAnswer, LegacyReadAsyncOptions, LegacyReadOptions, LegacyRequestOptions,
  LegacyTask, LegacyTaskWaitOptions, LegacyUpdate, LegacyUpdateOptions, LegacyUserInput,
} from './types.js';
