/**
 * `wds-files/spec`: the service's limits, file rules, event names and wire shapes, as constants
 * and types, for code that plans its own requests.
 *
 * @packageDocumentation
 */
export * from './limits.js';
export * from './extensions.js';
export * from './events.js';
export * from './time.js';
export { API_PREFIX, OPERATIONS, ADVANCED_TYPES } from './operations.js';
export type { AdvancedType, HttpMethod, OperationId, OperationKind, OperationSpec } from './operations.js';
export type {
  AdvancedPermission, AttachmentListEntry, Department, EnumOptionField, FaceImageListEntry, LayoutField, Member,
  MemberInput, Role, SheetAnswer, SheetLayout, Task, TokenAnswer, User, Webhook,
} from './schemas.js';
