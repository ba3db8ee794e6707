/**
 * wds-files: a typed client of the Workforce Data Service's API v2, and the pipelines that move
 * photos and attachments in and out of it (the same ones the `wds-files` command runs).
 *
 * The service's limits and file rules, as constants, are in `wds-files/spec`.
 *
 * @packageDocumentation
 */

// The client.
export { WdsClient } from './client/client.js';
export type { WdsClientOptions, WdsClientLimits, WdsClientRetry, Logger, WindowOption } from './client/options.js';
export type { CallOptions, StreamedItems } from './client/transport.js';
export type { WaitEvent, WaitReason } from './client/limiter.js';
export type { WindowStore, WindowStamps, WindowName } from './client/window-store.js';
export type { RetryPolicy } from './client/retry.js';
export type { Tasks, WaitOptions } from './client/tasks.js';
export type { StreamedBody, TaskRef, UpdateOptions } from './client/resources/common.js';
export type { MemberList, Members } from './client/resources/members.js';
export type { FaceImages, FaceImageItem, FaceImageWriteOptions, ListOptions } from './client/resources/face-images.js';
export type { Sheets, SheetMemberInput, SheetValue } from './client/resources/sheets.js';
export type { Attachments, AttachmentFileInput, AttachmentMemberInput } from './client/resources/attachments.js';
export type {
  AdvancedPermission, AdvancedPermissions, Department, Departments, EnumOptions, Role, Roles,
  UserInput, Users, WebhookInput, Webhooks,
} from './client/resources/organisation.js';
export type {
  AttachmentListEntry, EnumOptionField, FaceImageListEntry, LayoutField, Member, MemberInput, SheetAnswer,
  SheetLayout, Task, User, Webhook,
} from './spec/schemas.js';
export type { OperationId, AdvancedType } from './spec/operations.js';
export type { TaskStatus, WebhookEvent } from './spec/events.js';

// The legacy interface's client (v1.x).
export { LegacyClient, isLegacyTimeout, LegacyAsyncReadError, LEGACY_REQUESTS_PER_HOUR, LEGACY_TOKENS_PER_HOUR } from './client/v1/index.js';
export type {
  LegacyClientOptions, LegacyClientLimits, LegacyPollOptions, LegacyWaitEvent, LegacyWaitReason, LegacyVersion,
  LegacyUsers, LegacyDepartments, LegacySheets, LegacyTasks, LegacyDepartment, LegacyDepartmentList, LegacySheetData,
  LegacySheetRecord, LegacyTaskStatus, LegacyUser, LegacyUserList, LegacyFlag, LegacyAsyncProgress, LegacyAsyncReady, LegacyAsyncPending,
  LegacyPreset, LegacyAsyncResult, LegacyAsyncSheet, LegacyRawAnswer,
  LegacyReadAsyncOptions, LegacyReadOptions, LegacyRequestOptions, LegacyTask, LegacyTaskWaitOptions, LegacyUpdate,
  LegacyUpdateOptions, LegacyUserInput,
} from './client/v1/index.js';

// Errors.
export {
  WdsError, OptionsError, ApiError, BadRequestError, AuthenticationError, ForbiddenError, NotFoundError,
  MethodNotAllowedError, PayloadTooLargeError, RateLimitError, ServerError, MaintenanceError, NetworkError,
  TimeoutError, UpdateOutcomeUnknownError, RequestBodyError, BodyItemError, ResponseShapeError, TaskFailedError, WrongBaseUrlError, RedirectError,
  isWdsError, isApiError, isRateLimitError, isTaskFailedError, isUpdateOutcomeUnknownError, isWrongBaseUrlError, isRedirectError,
} from './client/errors.js';
export type { WdsErrorCode, ErrorDetails, FinalTask } from './client/errors.js';

// The pipelines.
export { runExport, defaultConcurrency } from './pipelines/export.js';
export { LockLostError, TargetLockedError } from './util/target-lock.js';
export type { LockHolder } from './util/target-lock.js';
export type { ExportOptions, ExportProgress, ExportResult } from './pipelines/export.js';
export type { MaxDelete, SnapshotInfo } from './archive/build.js';
export type { SnapshotCounts } from './archive/store.js';
export { runPhotoImport } from './pipelines/photo-import.js';
export type { PhotoImportMode, PhotoImportOptions, PhotoImportResult } from './pipelines/photo-import.js';
export { runAttachmentImport } from './pipelines/attachment-import.js';
export type { AttachmentImportMode, AttachmentImportOptions, AttachmentImportResult } from './pipelines/attachment-import.js';
export type { ImportResult, ImportRunOptions } from './pipelines/import-run.js';
export type { ImportProgress } from './pipelines/import-progress.js';
export { verifyExport, VerifyItems } from './pipelines/verify.js';
export type { VerifyItem, VerifyProblem, VerifyResult } from './pipelines/verify.js';
export { openSource } from './sources/open-source.js';
export type { OpenSourceOptions } from './sources/open-source.js';
export type { ImportSource, RefusedFile, SourceEntry, SourceFile, SourceWant } from './sources/source.js';
export { ImportJournal } from './stages/import/journal/journal.js';
export type { JournalStore, JournalStores } from './stages/import/journal/store.js';
export { RunReport, OUTCOMES } from './stages/report.js';
export type { ItemReport, Outcome } from './stages/report.js';

// Webhooks: the receiver to mount in a server of one's own, and its durable inbox.
export { createWebhookReceiver, MAX_DELIVERY_BYTES } from './webhooks/receiver.js';
export type { EventStore, WebhookRoute, WebhookReceiverOptions, WebhookRequestHandler, DeliveryOutcome, DeliveryStored, DeliveryDuplicate, DeliveryRefused, RefusalReason } from './webhooks/receiver.js';
export { WebhookInbox, readInboxEvents, defaultInboxFolder, eventKey } from './webhooks/inbox.js';
export type { InboxEvent, InboxEventInput, InboxSource, AppendResult, ReadOptions } from './webhooks/inbox.js';
