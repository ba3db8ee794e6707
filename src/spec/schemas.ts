/**
 * Zod schemas of every wire shape (api-v2.md with wire-format.md). Objects are loose: unknown keys
 * are kept, because wire-format.md asks clients to tolerate what the real service may add.
 */
import { z } from 'zod';
import { WEBHOOK_EVENTS, TASK_STATUSES } from './events.js';

export const errorBodySchema = z.looseObject({ errors: z.array(z.string()) });

/**
 * The lifetime key is `expire_in` (api-v2.md); one real client reads `expires_in`, so either is
 * accepted, as a number or a numeric string (wire-format.md, "Real-client facts"; the legacy token
 * sends a string).
 */
export const tokenSchema = z.looseObject({
  access_token: z.string().min(1),
  token_type: z.string().optional(),
  expire_in: z.union([z.number(), z.string()]).optional(),
  expires_in: z.union([z.number(), z.string()]).optional(),
});
export type TokenAnswer = z.infer<typeof tokenSchema>;

export const taskIdSchema = z.looseObject({ task_id: z.number().int() });

export const taskSchema = z.looseObject({
  id: z.number().int(),
  status: z.enum(TASK_STATUSES),
  messages: z.array(z.string()).optional(),
});
export type Task = z.infer<typeof taskSchema>;

export const customFieldValueSchema = z.looseObject({
  id: z.number().int(),
  name: z.string().optional(),
  values: z.array(z.string()),
});

const departmentRefSchema = z.looseObject({
  code: z.string(),
  name: z.string().optional(),
  names: z.array(z.string()).optional(),
});

/** A member as sent (all keys but `code` optional: partial update sends only what changes). */
export const memberInputSchema = z.looseObject({
  code: z.string(),
  name: z.string().optional(),
  name_kana: z.string().optional(),
  mail: z.string().optional(),
  entered_date: z.string().optional(),
  retired_date: z.string().optional(),
  gender: z.string().optional(),
  birthday: z.string().optional(),
  department: z.union([departmentRefSchema, z.literal('')]).nullable().optional(),
  sub_departments: z.array(departmentRefSchema).optional(),
  custom_fields: z.array(customFieldValueSchema).optional(),
});
export type MemberInput = z.infer<typeof memberInputSchema>;

/**
 * A member as answered. `years_of_service` is a string such as "15年5ヵ月" on the real service
 * (wire-format.md, "Real-client facts"); a number, the older guess, is still accepted.
 */
export const memberSchema = memberInputSchema.extend({
  age: z.number().nullable().optional(),
  years_of_service: z.union([z.string(), z.number()]).nullable().optional(),
});
export type Member = z.infer<typeof memberSchema>;

export const membersAnswerSchema = z.looseObject({
  updated_at: z.string().nullable().optional(),
  member_data: z.array(memberSchema),
});

export const memberDataBodySchema = z.looseObject({ member_data: z.array(memberInputSchema) });
export const deleteMembersBodySchema = z.looseObject({ codes: z.array(z.string()) });

/**
 * A layout field. `type_detail` stays a free string: the pipelines look only for `attach_file`,
 * and a value the service adds later must not break a listing. Formula fields carry
 * `read_only: true` and may have `enum: null` (wire-format.md, "Real-client facts").
 */
export const layoutFieldSchema = z.looseObject({
  id: z.number().int().optional(),
  name: z.string(),
  required: z.boolean().optional(),
  type: z.string().optional(),
  type_detail: z.string().optional(),
  read_only: z.boolean().optional(),
  max_length: z.number().nullable().optional(),
  enum: z.array(z.unknown()).nullable().optional(),
});
export type LayoutField = z.infer<typeof layoutFieldSchema>;

export const memberLayoutSchema = z.looseObject({
  custom_fields: z.array(layoutFieldSchema).optional(),
});

export const sheetLayoutSchema = z.looseObject({
  id: z.number().int(),
  name: z.string(),
  record_type: z.number().int(),
  custom_fields: z.array(layoutFieldSchema.extend({ id: z.number().int() })),
});
export type SheetLayout = z.infer<typeof sheetLayoutSchema>;
export const sheetLayoutsAnswerSchema = z.looseObject({ sheets: z.array(sheetLayoutSchema) });

export const sheetRecordSchema = z.looseObject({ custom_fields: z.array(customFieldValueSchema) });
export const sheetMemberSchema = z.looseObject({
  code: z.string().optional(),
  member_code: z.string().optional(),
  records: z.array(sheetRecordSchema).optional(),
  custom_fields: z.array(customFieldValueSchema).optional(),
});
export const sheetAnswerSchema = z.looseObject({
  id: z.number().int(),
  name: z.string(),
  record_type: z.number().int(),
  updated_at: z.string().nullable().optional(),
  member_data: z.array(sheetMemberSchema),
});
/** A sheet with the values of every member. */
export type SheetAnswer = z.infer<typeof sheetAnswerSchema>;
export const sheetBodySchema = z.looseObject({ member_data: z.array(sheetMemberSchema) });

export const faceImageListSchema = z.looseObject({
  member_data: z.array(
    z.looseObject({
      code: z.string(),
      file_name: z.string(),
      download_url: z.string(),
      updated_at: z.string(),
    }),
  ),
});
export type FaceImageListEntry = z.infer<typeof faceImageListSchema>['member_data'][number];

export const faceImageBodySchema = z.looseObject({
  enable_trimming: z.boolean().optional(),
  member_data: z.array(z.looseObject({ code: z.string(), base64_face_image: z.string() })),
});

export const attachmentListSchema = z.looseObject({
  member_data: z.array(
    z.looseObject({
      code: z.string(),
      records: z.array(
        z.looseObject({ file_name: z.string(), download_url: z.string(), updated_at: z.string() }),
      ),
    }),
  ),
});
export type AttachmentListEntry = z.infer<typeof attachmentListSchema>['member_data'][number];

export const attachmentBodySchema = z.looseObject({
  member_data: z.array(
    z.looseObject({
      code: z.string(),
      records: z.array(z.looseObject({ file_name: z.string(), base64_content: z.string() })),
    }),
  ),
});

export const departmentSchema = z.looseObject({
  code: z.string(),
  name: z.string(),
  parent_code: z.string().nullable().optional(),
  leader_member_code: z.string().nullable().optional(),
  order: z.number().int().nullable().optional(),
  memo: z.string().nullable().optional(),
});
export type Department = z.infer<typeof departmentSchema>;
export const departmentsSchema = z.looseObject({ department_data: z.array(departmentSchema) });

export const roleSchema = z.looseObject({ id: z.number().int(), name: z.string().optional(), type: z.string().optional() });
export type Role = z.infer<typeof roleSchema>;
export const rolesAnswerSchema = z.looseObject({ role_data: z.array(roleSchema) });

export const userSchema = z.looseObject({
  id: z.number().int(),
  email: z.string(),
  member_code: z.string().nullable(),
  role: roleSchema,
  is_active: z.boolean(),
  password_locked: z.boolean(),
  use_smartphone: z.boolean(),
  use_native_app: z.boolean(),
  last_login_at: z.string().nullable().optional(),
});
export type User = z.infer<typeof userSchema>;
export const usersAnswerSchema = z.looseObject({ user_data: z.array(userSchema) });

export const userRegisterBodySchema = z.looseObject({
  email: z.string(),
  member_code: z.string(),
  password: z.string(),
  role: z.looseObject({ id: z.number().int() }),
  is_active: z.boolean().optional(),
  password_locked: z.boolean().optional(),
  use_smartphone: z.boolean().optional(),
  use_native_app: z.boolean().optional(),
});
export const userUpdateBodySchema = userRegisterBodySchema.partial();

export const advancedPermissionSchema = z.looseObject({
  user_id: z.number().int(),
  add_codes: z.array(z.string()),
  exclusion_codes: z.array(z.string()),
});
export type AdvancedPermission = z.infer<typeof advancedPermissionSchema>;
export const advancedPermissionsSchema = z.looseObject({
  advanced_permission_data: z.array(advancedPermissionSchema),
});

export const enumOptionSchema = z.looseObject({ id: z.number().int().optional(), name: z.string() });
/** `id` is a string in api-v2.md and an integer in the real sample: either (wire-format.md, "Real-client facts"). */
export const enumOptionFieldSchema = z.looseObject({
  sheet_name: z.string(),
  id: z.union([z.string(), z.number()]),
  name: z.string(),
  enum_option_data: z.array(enumOptionSchema),
});
/** A choice field and its choices (masters). */
export type EnumOptionField = z.infer<typeof enumOptionFieldSchema>;
export const enumOptionsAnswerSchema = z.looseObject({ custom_field_data: z.array(enumOptionFieldSchema) });
export const enumOptionsBodySchema = z.looseObject({ enum_option_data: z.array(enumOptionSchema) });

export const webhookBodySchema = z.looseObject({
  url: z.string(),
  events: z.array(z.enum(WEBHOOK_EVENTS)),
  secret_token: z.string().optional(),
});
export const webhookSchema = z.looseObject({
  id: z.number().int(),
  url: z.string(),
  events: z.array(z.string()),
  secret_token: z.string().nullable().optional(),
  created_at: z.string().optional(),
  updated_at: z.string().optional(),
});
export type Webhook = z.infer<typeof webhookSchema>;
export const webhooksAnswerSchema = z.looseObject({ webhook_data: z.array(webhookSchema) });

export const webhookDeliverySchema = z.looseObject({
  event: z.enum(WEBHOOK_EVENTS),
  event_time: z.string(),
  member_data: z.array(z.looseObject({ code: z.string() })),
});

/** One human-readable line per zod issue: `member_data.3.code: expected string`. */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const where = issue.path.length ? issue.path.join('.') : 'body';
    return `${where}: ${issue.message}`;
  });
}
