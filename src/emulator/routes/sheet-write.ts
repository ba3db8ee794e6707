/**
 * What a sheet write does when its task runs (api-v2.md 4.4 Sheets 2 to 5, 10, 11): checks every
 * sent member against the rules, builds the member's new records, and changes the sheet only when
 * no member broke a rule (one NG message per problem, naming the member; nothing changes on NG).
 *
 * - Bulk update (4.4 Sheets 2): "information absent from the body is deleted". Each sent member's
 *   data is replaced by the body (fields absent from a sent record are cleared), and members absent
 *   from the body lose their data in this sheet, with their files: unlike the partial update (4.4
 *   Sheets 4), the bulk update does not say that absent members are unchanged. No member is
 *   registered or deleted.
 * - Partial update, single-record sheet (4.4 Sheets 3): only the sent fields change; "" clears.
 *   Partial update, multiple-record sheet (4.4 Sheets 4): each sent member's records are replaced
 *   as a whole, in array order; members not sent are unchanged.
 * - Add records (4.4 Sheets 5): the sent records go after the member's existing ones.
 *
 * File parts get no content through these writes (4.4 Sheets 10): a file part that had a file
 * loses it, except (a) on a single-record sheet when the sent value is the stored file name, and
 * (b) on a multiple-record sheet when the sent value names a file that exactly one of the member's
 * old records holds in that field and exactly one new record names: the file moves to that record.
 * A name that matches nothing leaves the part empty. Add records cannot carry files: a file part
 * value there is NG (files are added by the attachment register operation).
 *
 * Required fields: a whole record (bulk update, multiple-record partial update, add) must fill
 * every required field; a single-record partial update must not clear a required field it sends.
 * File and formula parts are exempt: neither can be set by these writes.
 */
import { peekEntries } from '../lazy-record.js';
import type { Company } from '../company.js';
import type { FieldDef, SheetRecord, SheetState, StoredFile } from '../model.js';
import type { TaskPlan } from './context.js';
import type { SentField, SentMember, SheetWriteMode } from './sheet-body.js';
import { checkFieldValues } from './custom-field-values.js';
import { recalculate } from './formula.js';

interface MemberChange {
  code: string;
  records: SheetRecord[];
  released: StoredFile[];
}

/** What one sent record asked of the sheet's file parts: field id → file name ("" clears). */
type FileRequests = Map<string, string>;

class MemberWriter {
  readonly errors: string[] = [];
  private readonly multi: boolean;

  constructor(
    private readonly company: Company,
    private readonly sheet: SheetState,
    private readonly mode: SheetWriteMode,
    private readonly code: string,
  ) {
    this.multi = sheet.def.record_type === 1;
  }

  private fail(recordIndex: number, field: FieldDef | null, problem: string): void {
    const record = this.multi ? `record ${recordIndex + 1}: ` : '';
    const what = field ? `custom field ${field.id} ("${field.name}"): ` : '';
    this.errors.push(`member ${this.code}: ${record}${what}${problem}`);
  }

  /** The member's records after the write, or undefined when a rule was broken. */
  build(sent: SentField[][]): MemberChange | undefined {
    const old = this.sheet.records[this.code] ?? [];
    if (!this.multi && sent.length > 1) {
      this.fail(0, null, `a single-record sheet holds one record per member, got ${sent.length}`);
      return undefined;
    }
    const built = sent.map((fields, i) => {
      const partialSingle = this.mode === 'partial' && !this.multi;
      const base = partialSingle && old[0] ? cloneRecord(old[0]) : { values: {}, files: {} };
      return { record: base, files: this.fill(i, base, fields, partialSingle) };
    });
    if (this.errors.length) return undefined;

    let records: SheetRecord[];
    if (this.mode === 'add') records = [...old, ...built.map((b) => b.record)];
    else if (!this.multi && this.mode === 'partial' && built.length === 0) records = old;
    else {
      this.carryFiles(old, built);
      records = built.map((b) => b.record);
    }
    // Formula parts follow every write (4.4 Sheets 11); only new records can have changed.
    for (const b of built) recalculate(this.sheet.def.fields, b.record);
    const kept = new Set(records.flatMap((r) => Object.values(r.files)));
    const released = old.flatMap((r) => Object.values(r.files)).filter((f) => !kept.has(f));
    return { code: this.code, records, released };
  }

  /** Puts the sent values into `record`; returns the file names asked for. */
  private fill(index: number, record: SheetRecord, fields: SentField[], partialSingle: boolean): FileRequests {
    const files: FileRequests = new Map();
    const seen = new Set<number>();
    for (const sent of fields) {
      const field = this.sheet.def.fields.find((f) => f.id === sent.id);
      if (!field) {
        this.fail(index, null, `custom field ${sent.id} is not a field of sheet ${this.sheet.def.id}`);
        continue;
      }
      if (seen.has(field.id)) {
        this.fail(index, field, 'is sent more than once in one record');
        continue;
      }
      seen.add(field.id);
      if (field.kind === 'calc_formula') {
        this.fail(index, field, 'is a formula part; it cannot be updated directly (it is recalculated)');
        continue;
      }
      if (field.kind === 'attach_file') {
        this.fileRequest(index, field, sent.values, files);
        continue;
      }
      const checked = checkFieldValues(field, sent.values, (code) => this.company.data.members[code] !== undefined);
      if (!checked.ok) {
        this.fail(index, field, checked.problem);
        continue;
      }
      if (partialSingle && field.required && checked.values.length === 0) {
        this.fail(index, field, 'is required and cannot be cleared');
        continue;
      }
      record.values[String(field.id)] = checked.values;
    }
    if (!partialSingle) this.checkRequired(index, record, seen);
    return files;
  }

  private fileRequest(index: number, field: FieldDef, values: string[], files: FileRequests): void {
    const named = values.filter((v) => v !== '');
    if (named.length > 1) {
      this.fail(index, field, `a file part holds one file, got ${named.length} names`);
      return;
    }
    if (this.mode === 'add' && named.length) {
      this.fail(index, field, 'added records cannot carry files; register attachments for the file part instead');
      return;
    }
    files.set(String(field.id), named[0] ?? '');
  }

  /** `sent`: fields of the record already checked; one that failed is not reported twice. */
  private checkRequired(index: number, record: SheetRecord, sent: Set<number>): void {
    for (const field of this.sheet.def.fields) {
      if (!field.required || field.kind === 'attach_file' || field.kind === 'calc_formula') continue;
      const values = record.values[String(field.id)];
      if (sent.has(field.id) && values === undefined) continue;
      if (!values?.length) this.fail(index, field, 'is required and has no value');
    }
  }

  /** Attachment preservation (api-v2.md 4.4 Sheets 10). */
  private carryFiles(old: SheetRecord[], built: { record: SheetRecord; files: FileRequests }[]): void {
    if (!this.multi) {
      const only = built[0];
      if (!only) return;
      const before = old[0];
      for (const [key, name] of only.files) {
        const file = before?.files[key];
        if (file && file.file_name === name) only.record.files[key] = file;
        else delete only.record.files[key];
      }
      return;
    }
    for (const field of this.sheet.def.fields.filter((f) => f.kind === 'attach_file')) {
      const key = String(field.id);
      const oldFiles = old.map((r) => r.files[key]).filter((f): f is StoredFile => !!f);
      for (const b of built) {
        const name = b.files.get(key);
        if (!name) continue;
        const holders = oldFiles.filter((f) => f.file_name === name);
        const askers = built.filter((other) => other.files.get(key) === name);
        if (holders.length === 1 && askers.length === 1) b.record.files[key] = holders[0]!;
      }
    }
  }
}

function cloneRecord(record: SheetRecord): SheetRecord {
  const values: Record<string, string[]> = {};
  for (const [key, list] of Object.entries(record.values)) values[key] = [...list];
  return { values, files: { ...record.files } };
}

/** Plans a sheet write against the sheet as it is when the task runs. */
export function planSheetWrite(company: Company, sheetId: number, mode: SheetWriteMode, sent: SentMember[]): TaskPlan {
  const sheet = company.data.sheets[String(sheetId)];
  if (!sheet) return { errors: [`sheet ${sheetId} no longer exists`], apply: () => undefined };
  const errors: string[] = [];
  const changes: MemberChange[] = [];
  const seen = new Set<string>();
  for (const member of sent) {
    if (seen.has(member.code)) {
      errors.push(`member ${member.code}: appears more than once in member_data`);
      continue;
    }
    seen.add(member.code);
    if (!company.data.members[member.code]) {
      errors.push(`member ${member.code}: no member has this code`);
      continue;
    }
    const writer = new MemberWriter(company, sheet, mode, member.code);
    const change = writer.build(member.records);
    errors.push(...writer.errors);
    if (change) changes.push(change);
  }
  if (mode === 'bulk') {
    // Members absent from a bulk update lose their data in the sheet (4.4 Sheets 2).
    for (const [code, records] of peekEntries(sheet.records)) {
      if (!seen.has(code)) changes.push({ code, records: [], released: records.flatMap((r) => Object.values(r.files)) });
    }
  }
  return {
    errors,
    apply: () => {
      for (const change of changes) {
        if (change.records.length) sheet.records[change.code] = change.records;
        else delete sheet.records[change.code];
        for (const file of change.released) company.releaseFile(file);
      }
      sheet.updated_at = company.now();
    },
  };
}
