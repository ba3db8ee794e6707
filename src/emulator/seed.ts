/**
 * Loads a seed folder (samples/company/README.md) into a company: `company.json` for the data,
 * `photos/<code>.jpg` for face photos, and the files that sheet records name. Everything is
 * checked before anything is loaded, with the rules the service's own writes apply (members by
 * the member write rules, sheet values by the sheet write rules), and every problem is reported at
 * once, each naming the file and the place in it. Files are read only when downloaded.
 */
import { readFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type { Company } from './company.js';
import { emptyCompanyData, type CompanyData, type FieldDef, type SheetRecord, type StoredFile } from './model.js';
import { seedCompanySchema, type SeedCompany } from './seed-schema.js';
import { checkAttachment, readPhotos, type SeedFile } from './seed-files.js';
import { buildMember } from './routes/member-input.js';
import { DepartmentIndex } from './routes/member-view.js';
import { checkFieldValues } from './routes/custom-field-values.js';
import { recalculate } from './routes/formula.js';
import { evaluateFormula } from './routes/member-formula.js';
import { describeIssues } from '../spec/schemas.js';
import { MAX_ADVANCED_PERMISSION_CODES, MAX_WEBHOOK_SETTINGS } from '../spec/limits.js';

export class SeedError extends Error {
  override readonly name = 'SeedError';
}

const COMPANY_FILE = 'company.json';

/** The seed function of a company whose data comes from the folder `dir`. */
export function seedFromDirectory(dir: string): (company: Company) => Promise<void> {
  const root = resolve(dir);
  return async (company) => {
    const seed = await readCompanyFile(root);
    await new SeedLoader(company, root, seed).load();
  };
}

function seedError(root: string, problems: string[]): SeedError {
  const shown = problems.slice(0, 50);
  const more = problems.length > shown.length ? `\n  ... and ${problems.length - shown.length} more` : '';
  return new SeedError(`the seed folder ${root} is not valid:\n  ${shown.join('\n  ')}${more}`);
}

async function readCompanyFile(root: string): Promise<SeedCompany> {
  let text: string;
  try {
    text = await readFile(join(root, COMPANY_FILE), 'utf8');
  } catch (error) {
    throw seedError(root, [`${COMPANY_FILE}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`]);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw seedError(root, [`${COMPANY_FILE}: is not valid JSON (${(error as Error).message})`]);
  }
  const parsed = seedCompanySchema.safeParse(raw);
  if (!parsed.success) throw seedError(root, describeIssues(parsed.error).map((p) => `${COMPANY_FILE}: ${p}`));
  return parsed.data;
}

/** Duplicates of `key` among `items`, reported at the path of each later one. */
function duplicates<T>(items: T[], key: (item: T) => string | number, path: string, what: string, problem: (at: string, message: string) => void): void {
  const seen = new Set<string | number>();
  items.forEach((item, i) => {
    const k = key(item);
    if (seen.has(k)) problem(`${path}.${i}`, `${what} ${JSON.stringify(k)} appears more than once`);
    seen.add(k);
  });
}

class SeedLoader {
  private readonly problems: string[] = [];
  private readonly data: CompanyData;
  private readonly now: string;
  /** Files to turn into blobs once everything has been checked. */
  private readonly files: { file: SeedFile; fileName: string; place: (stored: StoredFile) => void }[] = [];

  constructor(
    private readonly company: Company,
    private readonly root: string,
    private readonly seed: SeedCompany,
  ) {
    this.now = seed.seed_time ?? company.now();
    this.data = emptyCompanyData(this.now);
  }

  private problem(path: string, message: string): void {
    this.problems.push(`${COMPANY_FILE}: ${path}: ${message}`);
  }

  async load(): Promise<void> {
    const before = this.company.data;
    this.checkFields();
    this.loadDepartments();
    this.loadRoles();
    this.loadMembers();
    this.loadUsers();
    // Sheet values of face photo parts name members: the check reads them from the company.
    this.company.data = this.data;
    try {
      await this.loadSheets();
      this.loadPermissions();
      this.loadWebhooks();
      await this.loadPhotos();
    } finally {
      this.company.data = before;
    }
    if (this.problems.length) throw seedError(this.root, this.problems);
    for (const { file, fileName, place } of this.files) {
      const blob = this.company.blobs.putFile(file.path, file.size);
      place({ blob: blob.id, file_name: fileName, size: file.size, updated_at: this.now });
    }
    this.data.auto_enable_native_app = this.seed.auto_enable_native_app;
    this.setNextIds();
    this.company.data = this.data;
  }

  /** Field ids and master ids are the company's: the master operations address them alone (4.4 Masters). */
  private checkFields(): void {
    const all: { field: FieldDef; path: string; siblings: FieldDef[] }[] = [];
    this.seed.member_fields.forEach((field, i) => all.push({ field, path: `member_fields.${i}`, siblings: this.seed.member_fields }));
    this.seed.sheets.forEach((sheet, s) =>
      sheet.fields.forEach((field, i) => all.push({ field, path: `sheets.${s}.fields.${i}`, siblings: sheet.fields })),
    );
    const fieldIds = new Set<number>();
    const optionIds = new Set<number>();
    for (const { field, path, siblings } of all) {
      if (fieldIds.has(field.id)) this.problem(`${path}.id`, `field id ${field.id} is used by another field`);
      fieldIds.add(field.id);
      const names = new Set<string>();
      (field.options ?? []).forEach((option, i) => {
        if (optionIds.has(option.id)) this.problem(`${path}.options.${i}.id`, `option id ${option.id} is used by another option`);
        if (names.has(option.name)) this.problem(`${path}.options.${i}.name`, `option "${option.name}" appears more than once`);
        optionIds.add(option.id);
        names.add(option.name);
      });
      if (field.formula !== undefined) this.checkFormula(field.formula, siblings, `${path}.formula`);
    }
  }

  /** A formula refers to number box fields beside it (routes/formula.ts) and must parse. */
  private checkFormula(formula: string, siblings: FieldDef[], path: string): void {
    const probe: Record<string, string[]> = {};
    for (const [, ref] of formula.matchAll(/\{(\d+)\}/g)) {
      const target = siblings.find((f) => String(f.id) === ref);
      if (!target || target.kind !== 'number_box') this.problem(path, `{${ref}} is not a number_box field of the same layout`);
      probe[ref!] = ['1'];
    }
    if (evaluateFormula(formula, probe) === null) this.problem(path, `"${formula}" is not a formula of numbers, {id}, + - * / and parentheses`);
  }

  private loadDepartments(): void {
    const list = this.seed.departments;
    duplicates(list, (d) => d.code, 'departments', 'department code', (p, m) => this.problem(p, m));
    const codes = new Set(list.map((d) => d.code));
    list.forEach((d, i) => {
      if (d.parent_code !== null && !codes.has(d.parent_code)) this.problem(`departments.${i}.parent_code`, `department "${d.parent_code}" does not exist`);
    });
    // The department tree is a tree: following parents never comes back (api-v2.md 2, Department tree).
    const parentOf = new Map(list.map((d) => [d.code, d.parent_code]));
    list.forEach((d, i) => {
      const seen = new Set<string>();
      for (let at = d.parent_code; at !== null && !seen.has(at); at = parentOf.get(at) ?? null) {
        if (at === d.code) {
          this.problem(`departments.${i}.parent_code`, `department "${d.code}" is its own ancestor`);
          break;
        }
        seen.add(at);
      }
    });
    this.data.departments = list.map((d) => ({ ...d }));
  }

  private loadRoles(): void {
    duplicates(this.seed.roles, (r) => r.id, 'roles', 'role id', (p, m) => this.problem(p, m));
    this.data.roles = this.seed.roles.map((r) => ({ ...r }));
  }

  /** Members pass the rules of a member registration (routes/member-input.ts). */
  private loadMembers(): void {
    const list = this.seed.members;
    duplicates(list, (m) => m.code, 'members', 'member code', (p, m) => this.problem(p, m));
    this.data.member_fields = this.seed.member_fields.map((f) => ({ ...f }));
    const context = {
      departments: new DepartmentIndex(this.data.departments),
      fields: new Map(this.data.member_fields.map((f) => [String(f.id), f])),
      codesAfter: new Set(list.map((m) => m.code)),
      now: this.now,
    };
    // Ids follow the seed's order, from 1, as a company that registered them one by one would have.
    list.forEach((input, i) => {
      const built = buildMember(input, undefined, 'full', context);
      for (const problem of built.problems) this.problem(`members.${i}`, problem);
      this.data.members[input.code] = { ...built.member, id: i + 1 };
    });
    this.data.departments.forEach((d, i) => {
      if (d.leader_member_code !== null && !this.data.members[d.leader_member_code]) {
        this.problem(`departments.${i}.leader_member_code`, `member "${d.leader_member_code}" does not exist`);
      }
    });
  }

  private loadUsers(): void {
    const list = this.seed.users;
    duplicates(list, (u) => u.id, 'users', 'user id', (p, m) => this.problem(p, m));
    duplicates(list, (u) => u.email.toLowerCase(), 'users', 'email', (p, m) => this.problem(p, m));
    duplicates(list.filter((u) => u.member_code !== null), (u) => u.member_code!, 'users', 'linked member', (p, m) => this.problem(p, m));
    list.forEach((u, i) => {
      // The shape user registration accepts (routes/v2/users.ts): something, an @, a dotted domain.
      if (!/^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/.test(u.email)) this.problem(`users.${i}.email`, `"${u.email}" is not a mail address`);
      if (!this.data.roles.some((r) => r.id === u.role_id)) this.problem(`users.${i}.role_id`, `role ${u.role_id} does not exist`);
      if (u.member_code !== null && !this.data.members[u.member_code]) this.problem(`users.${i}.member_code`, `member "${u.member_code}" does not exist`);
    });
    this.data.users = list.map((u) => ({ ...u }));
  }

  private async loadSheets(): Promise<void> {
    duplicates(this.seed.sheets, (s) => s.id, 'sheets', 'sheet id', (p, m) => this.problem(p, m));
    for (const [s, sheet] of this.seed.sheets.entries()) {
      const fields = new Map(sheet.fields.map((f) => [f.id, { ...f }]));
      const state = { def: { id: sheet.id, name: sheet.name, record_type: sheet.record_type, fields: [...fields.values()] }, updated_at: this.now, records: {} as Record<string, SheetRecord[]> };
      duplicates(sheet.member_data, (m) => m.code, `sheets.${s}.member_data`, 'member code', (p, m) => this.problem(p, m));
      for (const [m, member] of sheet.member_data.entries()) {
        const path = `sheets.${s}.member_data.${m}`;
        if (!this.data.members[member.code]) this.problem(`${path}.code`, `member "${member.code}" does not exist`);
        // A single-record sheet holds one record per member (wire-format.md, Sheets: record_type 0).
        if (sheet.record_type === 0 && member.records.length > 1) this.problem(`${path}.records`, `sheet ${sheet.id} is a single-record sheet; it holds at most one record per member`);
        const records: SheetRecord[] = [];
        for (const [r, entries] of member.records.entries()) {
          records.push(await this.loadRecord(fields, entries.custom_fields, `${path}.records.${r}`));
        }
        state.records[member.code] = records;
      }
      this.data.sheets[String(sheet.id)] = state;
    }
  }

  private async loadRecord(fields: Map<number, FieldDef>, entries: SeedCompany['sheets'][number]['member_data'][number]['records'][number]['custom_fields'], path: string): Promise<SheetRecord> {
    const record: SheetRecord = { values: {}, files: {} };
    duplicates(entries, (e) => e.id, `${path}.custom_fields`, 'custom field', (p, m) => this.problem(p, m));
    for (const [e, entry] of entries.entries()) {
      const at = `${path}.custom_fields.${e}`;
      const field = fields.get(entry.id);
      if (!field) {
        this.problem(`${at}.id`, `field ${entry.id} is not a field of this sheet`);
        continue;
      }
      const what = `field ${field.id} ("${field.name}")`;
      if (field.kind === 'calc_formula') {
        this.problem(at, `${what} is a formula part: its value is computed by the service from the other parts, not given`);
      } else if (entry.file !== undefined) {
        if (field.kind !== 'attach_file') this.problem(at, `${what} is not a file part; give values`);
        else await this.loadAttachment(record, field, entry.file, entry.file_name, at);
      } else if (field.kind === 'attach_file') {
        this.problem(at, `${what} is a file part; give file, a path inside the seed folder`);
      } else {
        const checked = checkFieldValues(field, entry.values ?? [], (code) => this.company.data.members[code] !== undefined);
        if (!checked.ok) this.problem(`${at}.values`, `${what} ${checked.problem}`);
        else if (checked.values.length) record.values[String(field.id)] = checked.values;
      }
    }
    recalculate([...fields.values()], record);
    return record;
  }

  private async loadAttachment(record: SheetRecord, field: FieldDef, relative: string, shownName: string | undefined, at: string): Promise<void> {
    const fileName = shownName ?? relative.slice(relative.lastIndexOf('/') + 1);
    const checked = await checkAttachment(this.root, relative, fileName);
    if (!checked.ok) {
      this.problem(`${at}.file`, checked.problem);
      return;
    }
    this.files.push({ file: checked.file, fileName, place: (stored) => (record.files[String(field.id)] = stored) });
  }

  /** Extended access settings: a known user once per type, known codes, within the per-user limits (4.4). */
  private loadPermissions(): void {
    for (const type of ['member', 'department'] as const) {
      const list = this.seed.advanced_permissions[type];
      const path = `advanced_permissions.${type}`;
      duplicates(list, (p) => p.user_id, path, 'user', (p, m) => this.problem(p, m));
      const known = (code: string): boolean => (type === 'member' ? !!this.data.members[code] : this.data.departments.some((d) => d.code === code));
      list.forEach((p, i) => {
        if (!this.data.users.some((u) => u.id === p.user_id)) this.problem(`${path}.${i}.user_id`, `user ${p.user_id} does not exist`);
        for (const key of ['add_codes', 'exclusion_codes'] as const) {
          const unknown = p[key].filter((code) => !known(code));
          if (unknown.length) this.problem(`${path}.${i}.${key}`, `no ${type} has the code ${unknown.map((c) => `"${c}"`).join(', ')}`);
          if (p[key].length > MAX_ADVANCED_PERMISSION_CODES[type]) {
            this.problem(`${path}.${i}.${key}`, `holds ${p[key].length} codes, over the limit of ${MAX_ADVANCED_PERMISSION_CODES[type]}`);
          }
        }
      });
      this.data.advanced_permissions[type] = list.map((p) => ({ user_id: p.user_id, add_codes: [...p.add_codes], exclusion_codes: [...p.exclusion_codes] }));
    }
  }

  /** Webhook settings: at most 10, https URLs (api-v2.md 2 Webhook setting, 4.4). */
  private loadWebhooks(): void {
    const list = this.seed.webhooks;
    if (list.length > MAX_WEBHOOK_SETTINGS) this.problem('webhooks', `holds ${list.length} settings, over the limit of ${MAX_WEBHOOK_SETTINGS}`);
    duplicates(list, (w) => w.id, 'webhooks', 'webhook id', (p, m) => this.problem(p, m));
    list.forEach((w, i) => {
      if (new Set(w.events).size !== w.events.length) this.problem(`webhooks.${i}.events`, 'names an event more than once');
      if (!this.urlAllowed(w.url)) this.problem(`webhooks.${i}.url`, `must start with https://, got "${w.url}"`);
    });
    this.data.webhooks = list.map((w) => ({ ...w, events: [...w.events], created_at: this.now, updated_at: this.now }));
  }

  private urlAllowed(url: string): boolean {
    if (!URL.canParse(url)) return false;
    const { hostname } = new URL(url);
    if (url.startsWith('https://') && hostname) return true;
    // The emulator's local-testing switch, as for webhook registration.
    return this.company.settings.allowHttpWebhooks && url.startsWith('http://') && ['127.0.0.1', 'localhost'].includes(hostname);
  }

  private async loadPhotos(): Promise<void> {
    const problems: string[] = [];
    const photos = await readPhotos(this.root, problems);
    this.problems.push(...problems);
    for (const [code, file] of photos) {
      if (!this.data.members[code]) {
        this.problems.push(`photos/${basename(file.path)}: no member has the code ${code}`);
        continue;
      }
      // Face images are stored as <code>.jpg, as the face image operations store them.
      this.files.push({ file, fileName: `${code}.jpg`, place: (stored) => (this.data.photos[code] = stored) });
    }
  }

  /** Ids the service hands out next start after the seeded ones. */
  private setNextIds(): void {
    const next = (ids: number[]): number => Math.max(0, ...ids) + 1;
    const optionIds = [...this.data.member_fields, ...Object.values(this.data.sheets).flatMap((s) => s.def.fields)]
      .flatMap((f) => (f.options ?? []).map((o) => o.id));
    this.data.next_ids = {
      user: next(this.data.users.map((u) => u.id)),
      webhook: next(this.data.webhooks.map((w) => w.id)),
      enum_option: next(optionIds),
      task: this.data.next_ids.task,
      member: next(Object.values(this.data.members).map((m) => m.id)),
    };
  }
}
