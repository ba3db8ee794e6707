/** The public SDK of wds-files. */
export { WdsClient } from './client/client.js';
export type { WdsClientOptions, Logger } from './client/options.js';
export type { CallOptions } from './client/transport.js';
export type { WaitEvent, WaitReason } from './client/limiter.js';
export type { WaitOptions } from './client/tasks.js';
export type { TaskRef, UpdateOptions } from './client/resources/common.js';
export type { FaceImageItem, FaceImageWriteOptions } from './client/resources/face-images.js';
export type { AttachmentMemberInput } from './client/resources/attachments.js';
export type { SheetMemberInput } from './client/resources/sheets.js';
export type { UserInput, WebhookInput } from './client/resources/organisation.js';
export * from './client/errors.js';
export * as spec from './spec/index.js';
