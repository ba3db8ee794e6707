/** Every operation of API v2 and its handler (token issuance is the server's own). */
import type { RouteHandler } from '../context.js';
import type { OperationId } from '../../../spec/operations.js';
import { getTask } from './tasks.js';
import * as members from './members.js';
import * as faceImages from './face-images.js';
import * as sheets from './sheets.js';
import * as attachments from './attachments.js';
import * as departments from './departments.js';
import * as users from './users.js';
import * as roles from './roles.js';
import * as advancedPermissions from './advanced-permissions.js';
import * as enumOptions from './enum-options.js';
import * as webhooks from './webhooks.js';

export const ROUTES: Record<Exclude<OperationId, 'token.issue'>, RouteHandler> = {
  'tasks.get': getTask,
  'members.layout': members.memberLayout,
  'members.list': members.listMembers,
  'members.register': members.registerMembers,
  'members.bulkUpdate': members.bulkUpdateMembers,
  'members.partialUpdate': members.partialUpdateMembers,
  'members.replaceAll': members.replaceAllMembers,
  'members.delete': members.deleteMembers,
  'faceImages.list': faceImages.listFaceImages,
  'faceImages.register': faceImages.registerFaceImages,
  'faceImages.update': faceImages.updateFaceImages,
  'sheets.layouts': sheets.sheetLayouts,
  'sheets.layout': sheets.sheetLayout,
  'sheets.get': sheets.getSheet,
  'sheets.bulkUpdate': sheets.bulkUpdateSheet,
  'sheets.partialUpdate': sheets.partialUpdateSheet,
  'sheets.addRecords': sheets.addSheetRecords,
  'attachments.list': attachments.listAttachments,
  'attachments.register': attachments.registerAttachments,
  'attachments.update': attachments.updateAttachments,
  'departments.list': departments.listDepartments,
  'departments.bulkUpdate': departments.bulkUpdateDepartments,
  'users.list': users.listUsers,
  'users.get': users.getUser,
  'users.register': users.registerUser,
  'users.update': users.updateUser,
  'users.delete': users.deleteUser,
  'roles.list': roles.listRoles,
  'advancedPermissions.list': advancedPermissions.listAdvancedPermissions,
  'advancedPermissions.replace': advancedPermissions.replaceAdvancedPermissions,
  'enumOptions.list': enumOptions.listEnumOptions,
  'enumOptions.get': enumOptions.getEnumOption,
  'enumOptions.update': enumOptions.updateEnumOptions,
  'webhooks.list': webhooks.listWebhooks,
  'webhooks.register': webhooks.registerWebhook,
  'webhooks.update': webhooks.updateWebhook,
  'webhooks.delete': webhooks.deleteWebhook,
};
