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
  /** The token, sent as `Service-Token` on every call; never shown in logs or errors. */
  access_token: z.string().min(1),
  /** The kind of token. */
  token_type: z.string().optional(),
  /** Its lifetime in seconds. */
  expire_in: z.union([z.number(), z.string()]).optional(),
  /** Its lifetime in seconds, as some services spell it. */
  expires_in: z.union([z.number(), z.string()]).optional(),
});
/** The answer to a token request. @interface */
export type TokenAnswer = z.infer<typeof tokenSchema>;

export const taskIdSchema = z.looseObject({ task_id: z.number().int() });

export const taskSchema = z.looseObject({
  /** The task's id. */
  id: z.number().int(),
  /** WAITING or RUNNING, then OK, NG or ERROR. */
  status: z.enum(TASK_STATUSES),
  /** What the service says about it: why it ended NG, for one. */
  messages: z.array(z.string()).optional(),
});
/** A task: an update the service runs after accepting it. @interface */
export type Task = z.infer<typeof taskSchema>;

export const customFieldValueSchema = z.looseObject({
  /** The field's id (from the layout). */
  id: z.number().int(),
  /** The field's name (in answers). */
  name: z.string().optional(),
  /** Its values, as strings (dates `YYYY-MM-DD`). */
  values: z.array(z.string()),
});

const departmentRefSchema = z.looseObject({
  /** The department's code. */
  code: z.string(),
  /** Its name (in answers). */
  name: z.string().optional(),
  /** The names from the root department down to this one (in answers). */
  names: z.array(z.string()).optional(),
});

/** A member as sent (all keys but `code` optional: partial update sends only what changes). */
export const memberInputSchema = z.looseObject({
  /** The member's code (employee number): the member's key. */
  code: z.string(),
  /** The member's name. */
  name: z.string().optional(),
  /** The name's reading, in kana. */
  name_kana: z.string().optional(),
  /** The mail address. */
  mail: z.string().optional(),
  /** The day the member joined, `YYYY-MM-DD`. */
  entered_date: z.string().optional(),
  /** The day the member left, `YYYY-MM-DD`, or `""`. */
  retired_date: z.string().optional(),
  /** As the company records it. */
  gender: z.string().optional(),
  /** `YYYY-MM-DD`. */
  birthday: z.string().optional(),
  /** The main department, by its code. */
  department: z.union([departmentRefSchema, z.literal('')]).nullable().optional(),
  /** Further departments, by their codes. */
  sub_departments: z.array(departmentRefSchema).optional(),
  /** Values of the company's own member fields. */
  custom_fields: z.array(customFieldValueSchema).optional(),
});
/** A member as sent: every key but `code` is optional (a partial update sends only what changes). @interface */
export type MemberInput = z.infer<typeof memberInputSchema>;

/**
 * A member as answered. `years_of_service` is a string such as "15年5ヵ月" on the real service
 * (wire-format.md, "Real-client facts"); a number, the older guess, is still accepted. `id` and
 * `face_image` are optional so that answers recorded before the service sent them still parse.
 */
export const memberSchema = memberInputSchema.extend({
  /** The service's own integer id of the member. No request takes it: `code` is the key. */
  id: z.number().int().optional(),
  /** When the member has a face photo, the time it was last changed (`YYYY-MM-DD HH:MM:SS`); null without one. */
  face_image: z
    .looseObject({
      /** When the photo was last changed, `YYYY-MM-DD HH:MM:SS` in service time. */
      updated_at: z.string(),
    })
    .nullable()
    .optional(),
  /** Computed by the service. */
  age: z.number().nullable().optional(),
  /** Computed by the service: a string such as `15年5ヵ月` (years, then months). */
  years_of_service: z.union([z.string(), z.number()]).nullable().optional(),
});
/** A member as the service answers it, with `age`, `years_of_service` and department names. @interface */
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
 * `read_only: true`; their `enum` is `[]` in sheet layouts and null in the member layout
 * (wire-format.md, "Real-client facts").
 */
export const layoutFieldSchema = z.looseObject({
  /** The field's id, as values and file parts name it. */
  id: z.number().int().optional(),
  /** The field's name. */
  name: z.string(),
  /** Whether a value is required. */
  required: z.boolean().optional(),
  /** The field's value type. */
  type: z.string().optional(),
  /** The kind of part: `attach_file` for a file part, `face_image`, `calc_formula`, `text_box`... */
  type_detail: z.string().optional(),
  /** True for fields that cannot be written, such as formulas. */
  read_only: z.boolean().optional(),
  /** The longest value allowed, when there is a limit. */
  max_length: z.number().nullable().optional(),
  /** The choices of a choice field. */
  enum: z.array(z.unknown()).nullable().optional(),
});
/** A field of a member or sheet layout. @interface */
export type LayoutField = z.infer<typeof layoutFieldSchema>;

export const memberLayoutSchema = z.looseObject({
  custom_fields: z.array(layoutFieldSchema).optional(),
});

export const sheetLayoutSchema = z.looseObject({
  /** The sheet's id. */
  id: z.number().int(),
  /** The sheet's name. */
  name: z.string(),
  /** 0: one record per member; 1: several records per member. */
  record_type: z.number().int(),
  /** The sheet's fields. */
  custom_fields: z.array(
    layoutFieldSchema.extend({
      /** The field's id, as values and file parts name it. */
      id: z.number().int(),
    }),
  ),
});
/** A sheet's layout: its fields. @interface */
export type SheetLayout = z.infer<typeof sheetLayoutSchema>;
export const sheetLayoutsAnswerSchema = z.looseObject({ sheets: z.array(sheetLayoutSchema) });

export const sheetRecordSchema = z.looseObject({
  /** The record's values. */
  custom_fields: z.array(customFieldValueSchema),
});
export const sheetMemberSchema = z.looseObject({
  /** The member's code. */
  code: z.string().optional(),
  /** The member's code, as requests name it. */
  member_code: z.string().optional(),
  /** The member's records, each with its values. */
  records: z.array(sheetRecordSchema).optional(),
  /** The values of a one-record sheet, as requests may send them. */
  custom_fields: z.array(customFieldValueSchema).optional(),
});
export const sheetAnswerSchema = z.looseObject({
  /** The sheet's id. */
  id: z.number().int(),
  /** The sheet's name. */
  name: z.string(),
  /** 0: one record per member; 1: several records per member. */
  record_type: z.number().int(),
  /** When the sheet last changed, `YYYY-MM-DD HH:MM:SS`. */
  updated_at: z.string().nullable().optional(),
  /** Every member's records. */
  member_data: z.array(sheetMemberSchema),
});
/** A sheet with the values of every member. @interface */
export type SheetAnswer = z.infer<typeof sheetAnswerSchema>;
export const sheetBodySchema = z.looseObject({ member_data: z.array(sheetMemberSchema) });

export const faceImageListSchema = z.looseObject({
  member_data: z.array(
    z.looseObject({
      /** The member's code. */
      code: z.string(),
      /** The photo's file name. */
      file_name: z.string(),
      /** Where to download it: valid 15 minutes, and takes no token. */
      download_url: z.string(),
      /** When the photo was last set, `YYYY-MM-DD HH:MM:SS`. */
      updated_at: z.string(),
    }),
  ),
});
/** One member's photo in a listing. @interface */
export type FaceImageListEntry = z.infer<typeof faceImageListSchema>['member_data'][number];

export const faceImageBodySchema = z.looseObject({
  enable_trimming: z.boolean().optional(),
  member_data: z.array(z.looseObject({ code: z.string(), base64_face_image: z.string() })),
});

export const attachmentListSchema = z.looseObject({
  member_data: z.array(
    z.looseObject({
      /** The member's code. */
      code: z.string(),
      /** The member's records that hold a file, in order. */
      records: z.array(
        z.looseObject({
          /** The file's name. */
          file_name: z.string(),
          /** Where to download it: valid 15 minutes, and takes no token. */
          download_url: z.string(),
          /** When the file was last set, `YYYY-MM-DD HH:MM:SS`. */
          updated_at: z.string(),
        }),
      ),
    }),
  ),
});
/** One member's files of a file part in a listing. @interface */
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
  /** The department's code. */
  code: z.string(),
  /** The department's name. */
  name: z.string(),
  /** The parent department's code; none for a top department. */
  parent_code: z.string().nullable().optional(),
  /** The code of the member who leads it. */
  leader_member_code: z.string().nullable().optional(),
  /** Its place among its siblings. */
  order: z.number().int().nullable().optional(),
  /** A note on the department. */
  memo: z.string().nullable().optional(),
});
/** A department of the tree. @interface */
export type Department = z.infer<typeof departmentSchema>;
export const departmentsSchema = z.looseObject({ department_data: z.array(departmentSchema) });

export const roleSchema = z.looseObject({
  /** The role's id. */
  id: z.number().int(),
  /** The role's name. */
  name: z.string().optional(),
  /** The kind of role. */
  type: z.string().optional(),
});
/** A role of user accounts. @interface */
export type Role = z.infer<typeof roleSchema>;
export const rolesAnswerSchema = z.looseObject({ role_data: z.array(roleSchema) });

export const userSchema = z.looseObject({
  /** The account's id. */
  id: z.number().int(),
  /** The login address. */
  email: z.string(),
  /** The member the account belongs to; null when none. */
  member_code: z.string().nullable(),
  /** The account's role. */
  role: roleSchema,
  /** Whether the account is in use (false: stopped). */
  is_active: z.boolean(),
  /** Whether the password is locked. */
  password_locked: z.boolean(),
  /** Whether the account may use a smartphone browser. */
  use_smartphone: z.boolean(),
  /** Whether the account may use the smartphone application. */
  use_native_app: z.boolean(),
  /** The last login, `YYYY-MM-DD HH:MM:SS`; null when never (single-user answers only). */
  last_login_at: z.string().nullable().optional(),
});
/** A user account. The password is never answered. @interface */
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
  /** The user account's id. */
  user_id: z.number().int(),
  /** Member or department codes the user may see beyond the role. */
  add_codes: z.array(z.string()),
  /** Member or department codes the user may not see. */
  exclusion_codes: z.array(z.string()),
});
/** One user's extended access settings of one kind. @interface */
export type AdvancedPermission = z.infer<typeof advancedPermissionSchema>;
export const advancedPermissionsSchema = z.looseObject({
  advanced_permission_data: z.array(advancedPermissionSchema),
});

export const enumOptionSchema = z.looseObject({
  /** The choice's id; none for a choice to add. */
  id: z.number().int().optional(),
  /** The choice as shown. */
  name: z.string(),
});
/** `id` is a string in api-v2.md and an integer in the real sample: either (wire-format.md, "Real-client facts"). */
export const enumOptionFieldSchema = z.looseObject({
  /** The sheet the field is in. */
  sheet_name: z.string(),
  /** The field's id. */
  id: z.union([z.string(), z.number()]),
  /** The field's name. */
  name: z.string(),
  /** Its choices, in order. */
  enum_option_data: z.array(enumOptionSchema),
});
/** A choice field and its choices (masters). @interface */
export type EnumOptionField = z.infer<typeof enumOptionFieldSchema>;
export const enumOptionsAnswerSchema = z.looseObject({ custom_field_data: z.array(enumOptionFieldSchema) });
export const enumOptionsBodySchema = z.looseObject({ enum_option_data: z.array(enumOptionSchema) });

export const webhookBodySchema = z.looseObject({
  url: z.string(),
  events: z.array(z.enum(WEBHOOK_EVENTS)),
  secret_token: z.string().optional(),
});
export const webhookSchema = z.looseObject({
  /** The setting's id. */
  id: z.number().int(),
  /** Where the service delivers the events (`https://`). */
  url: z.string(),
  /** The member events delivered. */
  events: z.array(z.string()),
  /** Sent back in the `Service-Token` header of each delivery; masked in every output of wds-files. */
  secret_token: z.string().nullable().optional(),
  /** When the setting was made. */
  created_at: z.string().optional(),
  /** When the setting last changed. */
  updated_at: z.string().optional(),
});
/** A webhook setting. @interface */
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
