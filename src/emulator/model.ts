/**
 * The company's data as the emulator holds it. Wire shapes are made from these by the routes;
 * files are held as blob ids (see blobs.ts), never as bytes here, so the state stays small and can
 * be saved as JSON.
 */

/**
 * Field kinds of layouts, as the seed format names them. The wire's `type_detail` spells the
 * choice parts `pull_down`, `radio_button` and `check_box` (routes/member-layout.ts).
 */
export type FieldKind =
  | 'text_box' | 'text_area' | 'number_box' | 'pulldown' | 'radio' | 'checkbox'
  | 'date' | 'year_month' | 'link' | 'attach_file' | 'face_image' | 'calc_formula';

export interface EnumOption {
  id: number;
  name: string;
}

export interface FieldDef {
  id: number;
  name: string;
  kind: FieldKind;
  required: boolean;
  max_length: number | null;
  /** Masters of pulldown, radio and checkbox fields (api-v2.md 4.4 Masters). */
  options?: EnumOption[];
  /** Formula parts: an arithmetic expression over other fields of the record, `{id}` each. */
  formula?: string;
  /** Fields under data integration are left out of the master operations (4.4 Masters 1). */
  integrated?: boolean;
}

export interface Member {
  /**
   * The service's own integer id (wire-format.md, "Real-client facts"): handed out once, when the
   * member is registered, kept through updates and never reused after a delete. No request takes it.
   */
  id: number;
  code: string;
  name: string;
  name_kana: string;
  mail: string;
  entered_date: string;
  retired_date: string;
  gender: string;
  birthday: string;
  department_code: string | null;
  sub_department_codes: string[];
  /** Member custom fields by field id. */
  custom_fields: Record<string, string[]>;
  updated_at: string;
}

/** A member as a write builds it, before the service gives it its id (routes/member-write.ts). */
export type MemberFields = Omit<Member, 'id'>;

export interface StoredFile {
  blob: string;
  file_name: string;
  size: number;
  updated_at: string;
}

export interface SheetRecord {
  /** Values by field id (not file parts). */
  values: Record<string, string[]>;
  /** Files by field id (file parts). */
  files: Record<string, StoredFile>;
}

export interface SheetDef {
  id: number;
  name: string;
  /** 0 single-record sheet, 1 multiple-record sheet (wire-format.md, Sheets). */
  record_type: 0 | 1;
  fields: FieldDef[];
}

export interface SheetState {
  def: SheetDef;
  updated_at: string;
  /** Records by member code, in array order (4.4 Sheets 2, 4). */
  records: Record<string, SheetRecord[]>;
}

export interface Department {
  code: string;
  name: string;
  parent_code: string | null;
  leader_member_code: string | null;
  order: number | null;
  /** As sent: `""` and `null` both occur in the real samples (wire-format.md, "Real-client facts"). */
  memo: string | null;
}

export interface Role {
  id: number;
  name: string;
  /**
   * `Adm` for administrator roles, `General` for the others. The wire shows the others as `一般`
   * (routes/v2/roles.ts `roleTypeOnWire`).
   */
  type: 'Adm' | 'General';
}

export interface User {
  id: number;
  email: string;
  member_code: string | null;
  password: string;
  role_id: number;
  is_active: boolean;
  password_locked: boolean;
  use_smartphone: boolean;
  use_native_app: boolean;
  use_secure: boolean;
  last_login_at: string | null;
  /** Kept by the legacy interface's user operations (v1 reads show them); absent for others. */
  created_at?: string;
  password_modified_at?: string;
  last_modified_at?: string;
}

export interface AdvancedPermission {
  user_id: number;
  add_codes: string[];
  exclusion_codes: string[];
}

export interface WebhookSetting {
  id: number;
  url: string;
  events: string[];
  secret_token: string | null;
  created_at: string;
  updated_at: string;
}

export interface CompanyData {
  members: Record<string, Member>;
  members_updated_at: string;
  member_fields: FieldDef[];
  photos: Record<string, StoredFile>;
  sheets: Record<string, SheetState>;
  departments: Department[];
  roles: Role[];
  users: User[];
  advanced_permissions: { member: AdvancedPermission[]; department: AdvancedPermission[] };
  webhooks: WebhookSetting[];
  /** Next ids handed out by the service. */
  next_ids: { user: number; webhook: number; enum_option: number; task: number; member: number };
  /** The administrator setting that turns the smartphone app on for new users (4.4 Users 2). */
  auto_enable_native_app: boolean;
}

/**
 * State saved by a version before members had ids: each member without one gets the next, in code
 * order, and `next_ids.member` starts after the highest.
 */
export function completeMemberIds(data: CompanyData): void {
  const members = Object.values(data.members) as (Omit<Member, 'id'> & { id?: number })[];
  let next = Math.max((data.next_ids as Partial<CompanyData['next_ids']>).member ?? 1, ...members.map((m) => (m.id ?? 0) + 1));
  for (const member of members.sort((a, b) => (a.code < b.code ? -1 : 1))) member.id ??= next++;
  data.next_ids.member = next;
}

export function emptyCompanyData(now: string): CompanyData {
  return {
    members: {},
    members_updated_at: now,
    member_fields: [],
    photos: {},
    sheets: {},
    departments: [],
    roles: [],
    users: [],
    advanced_permissions: { member: [], department: [] },
    webhooks: [],
    next_ids: { user: 1, webhook: 1, enum_option: 1, task: 1, member: 1 },
    auto_enable_native_app: false,
  };
}
