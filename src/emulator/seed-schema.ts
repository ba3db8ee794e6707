/**
 * The shape of a seed folder's `company.json` (documented in samples/company/README.md). Strict
 * objects: a misspelt key is an error rather than silently ignored data. Members and sheet records
 * are written like the wire (wire-format.md: `department: {"code"}`, `custom_fields: [{"id",
 * "values"}]`), file parts name a file of the folder by relative path.
 */
import { z } from 'zod';
import type { FieldKind } from './model.js';
import { WEBHOOK_EVENTS } from '../spec/events.js';
import { TIMESTAMP_PATTERN } from '../spec/time.js';

const FIELD_KINDS = [
  'text_box', 'text_area', 'number_box', 'pulldown', 'radio', 'checkbox',
  'date', 'year_month', 'link', 'attach_file', 'face_image', 'calc_formula',
] as const satisfies readonly FieldKind[];

const CHOICE_KINDS: readonly FieldKind[] = ['pulldown', 'radio', 'checkbox'];

/** The service's `type_detail` of the choice parts, also taken as a kind (routes/member-layout.ts). */
const WIRE_CHOICE_KINDS = { pull_down: 'pulldown', radio_button: 'radio', check_box: 'checkbox' } as const;
const kindSchema = z
  .enum([...FIELD_KINDS, ...(Object.keys(WIRE_CHOICE_KINDS) as (keyof typeof WIRE_CHOICE_KINDS)[])])
  .transform((kind): FieldKind => (kind in WIRE_CHOICE_KINDS ? WIRE_CHOICE_KINDS[kind as keyof typeof WIRE_CHOICE_KINDS] : (kind as FieldKind)));

const id = z.number().int().positive();
const code = z.string().min(1);
const timestamp = z.string().regex(TIMESTAMP_PATTERN, 'must be a timestamp YYYY-MM-DD HH:MM:SS');

export const seedFieldSchema = z
  .strictObject({
    id,
    name: z.string().min(1),
    kind: kindSchema,
    required: z.boolean().default(false),
    max_length: z.number().int().positive().nullable().default(null),
    /** Masters of pulldown, radio and checkbox fields. */
    options: z.array(z.strictObject({ id, name: z.string().min(1) })).optional(),
    /** Formula parts: arithmetic over number box fields, `{id}` each. */
    formula: z.string().min(1).optional(),
    /** Under data integration: left out of the master operations (api-v2.md 4.4 Masters 1). */
    integrated: z.boolean().optional(),
  })
  .superRefine((field, ctx) => {
    const choice = CHOICE_KINDS.includes(field.kind);
    if (choice && !field.options) ctx.addIssue({ code: 'custom', path: ['options'], message: `a ${field.kind} field needs options (its masters)` });
    if (!choice && field.options) ctx.addIssue({ code: 'custom', path: ['options'], message: `only pulldown, radio and checkbox fields have options, not ${field.kind}` });
    const formula = field.kind === 'calc_formula';
    if (formula && !field.formula) ctx.addIssue({ code: 'custom', path: ['formula'], message: 'a calc_formula field needs a formula' });
    if (!formula && field.formula) ctx.addIssue({ code: 'custom', path: ['formula'], message: `only calc_formula fields have a formula, not ${field.kind}` });
  });

const departmentSchema = z.strictObject({
  code,
  name: z.string().min(1),
  parent_code: code.nullable().default(null),
  leader_member_code: code.nullable().default(null),
  order: z.number().int().nullable().default(null),
  memo: z.string().nullable().default(''),
});

/** `一般` is how the service spells a general role (wire-format.md, "Real-client facts"); kept as `General`. */
const roleSchema = z.strictObject({
  id,
  name: z.string().min(1),
  type: z.enum(['Adm', 'General', '一般']).transform((t): 'Adm' | 'General' => (t === 'Adm' ? 'Adm' : 'General')),
});

const userSchema = z.strictObject({
  id,
  email: z.string().min(1),
  member_code: code.nullable(),
  password: z.string().min(1),
  role_id: id,
  is_active: z.boolean().default(true),
  password_locked: z.boolean().default(false),
  use_smartphone: z.boolean().default(false),
  use_native_app: z.boolean().default(false),
  use_secure: z.boolean().default(false),
  last_login_at: timestamp.nullable().default(null),
});

const valuesEntry = z.strictObject({ id, values: z.array(z.string()) });

export const seedMemberSchema = z.strictObject({
  code,
  name: z.string(),
  name_kana: z.string().default(''),
  mail: z.string().default(''),
  entered_date: z.string().default(''),
  retired_date: z.string().default(''),
  gender: z.string().default(''),
  birthday: z.string().default(''),
  department: z.strictObject({ code }).nullable().default(null),
  sub_departments: z.array(z.strictObject({ code })).default([]),
  custom_fields: z.array(valuesEntry).default([]),
});
export type SeedMember = z.infer<typeof seedMemberSchema>;

/** One part of a record: `values`, or for a file part `file` (path inside the seed folder). */
const recordEntry = z
  .strictObject({
    id,
    values: z.array(z.string()).optional(),
    file: z.string().min(1).optional(),
    /** The name the service shows; the file's own name when absent. */
    file_name: z.string().min(1).optional(),
  })
  .superRefine((entry, ctx) => {
    if ((entry.values === undefined) === (entry.file === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'give either values or file' });
    }
    if (entry.file_name !== undefined && entry.file === undefined) {
      ctx.addIssue({ code: 'custom', path: ['file_name'], message: 'file_name goes with file' });
    }
  });

const sheetSchema = z.strictObject({
  id,
  name: z.string().min(1),
  record_type: z.union([z.literal(0), z.literal(1)]),
  fields: z.array(seedFieldSchema),
  member_data: z.array(z.strictObject({ code, records: z.array(z.strictObject({ custom_fields: z.array(recordEntry) })) })).default([]),
});

const permissionSchema = z.strictObject({
  user_id: id,
  add_codes: z.array(code).default([]),
  exclusion_codes: z.array(code).default([]),
});

const webhookSchema = z.strictObject({
  id,
  url: z.string().min(1),
  events: z.array(z.enum(WEBHOOK_EVENTS)).min(1),
  secret_token: z.string().min(1).nullable().default(null),
});

export const seedCompanySchema = z.strictObject({
  /** A note for people reading the file; not loaded. */
  description: z.string().optional(),
  /** `updated_at` of everything seeded; the service time of loading when absent. */
  seed_time: timestamp.optional(),
  auto_enable_native_app: z.boolean().default(false),
  departments: z.array(departmentSchema).default([]),
  roles: z.array(roleSchema).default([]),
  users: z.array(userSchema).default([]),
  member_fields: z.array(seedFieldSchema).default([]),
  members: z.array(seedMemberSchema).default([]),
  sheets: z.array(sheetSchema).default([]),
  advanced_permissions: z
    .strictObject({ member: z.array(permissionSchema).default([]), department: z.array(permissionSchema).default([]) })
    .prefault({}),
  webhooks: z.array(webhookSchema).default([]),
});
export type SeedCompany = z.infer<typeof seedCompanySchema>;
