/**
 * The layouts of the sample company and of generated companies: member custom fields and two
 * sheets, one single-record and one multiple-record, each with a file part. One definition, so
 * that `samples/make-samples.ts` and `--generate N` give companies of the same shape.
 */
import type { FieldDef, SheetDef } from './model.js';

/**
 * Field ids from 1024 up: records and members hold values in objects keyed by field id, and V8
 * keeps integer keys below 1024 in an array as long as the largest key (kilobytes per record).
 */
export const MEMBER_FIELD_IDS = { employment: 1101, bloodType: 1102, extension: 1103 } as const;
export const CONTRACT_SHEET_ID = 1;
export const CONTRACT_FIELD_IDS = { start: 1201, term: 1202, salary: 1203, file: 1204 } as const;
export const QUALIFICATION_SHEET_ID = 2;
export const QUALIFICATION_FIELD_IDS = { name: 1301, acquired: 1302, category: 1303, points: 1304, allowance: 1305, file: 1306 } as const;

const field = (id: number, name: string, kind: FieldDef['kind'], extra: Partial<FieldDef> = {}): FieldDef => ({
  id, name, kind, required: false, max_length: null, ...extra,
});

const options = (first: number, names: string[]): { id: number; name: string }[] => names.map((name, i) => ({ id: first + i, name }));

export const EMPLOYMENT_TYPES = ['正社員 / Full-time', '契約社員 / Fixed-term', 'パート / Part-time', '業務委託 / Contractor'];
export const BLOOD_TYPES = ['A', 'B', 'O', 'AB'];
export const CONTRACT_TERMS = ['無期 / Permanent', '1年 / One year', '3年 / Three years'];
export const QUALIFICATION_CATEGORIES = ['国家資格 / National', '公的資格 / Public', '民間資格 / Private'];

export function memberFields(): FieldDef[] {
  return [
    field(MEMBER_FIELD_IDS.employment, '雇用形態 / Employment type', 'pulldown', { options: options(1, EMPLOYMENT_TYPES) }),
    field(MEMBER_FIELD_IDS.bloodType, '血液型 / Blood type', 'pulldown', { options: options(5, BLOOD_TYPES) }),
    field(MEMBER_FIELD_IDS.extension, '内線番号 / Extension', 'text_box', { max_length: 10 }),
  ];
}

export function sheetDefs(): SheetDef[] {
  const c = CONTRACT_FIELD_IDS;
  const q = QUALIFICATION_FIELD_IDS;
  return [
    {
      id: CONTRACT_SHEET_ID,
      name: '基本契約 / Employment contract',
      record_type: 0,
      fields: [
        field(c.start, '契約開始日 / Start date', 'date'),
        field(c.term, '契約期間 / Term', 'pulldown', { options: options(9, CONTRACT_TERMS) }),
        field(c.salary, '月給 / Monthly salary', 'number_box'),
        field(c.file, '契約書 / Contract', 'attach_file'),
      ],
    },
    {
      id: QUALIFICATION_SHEET_ID,
      name: '資格 / Qualifications',
      record_type: 1,
      fields: [
        field(q.name, '資格名 / Qualification', 'text_box', { max_length: 100 }),
        field(q.acquired, '取得日 / Acquired on', 'date'),
        field(q.category, '区分 / Category', 'pulldown', { options: options(12, QUALIFICATION_CATEGORIES) }),
        field(q.points, '手当点数 / Allowance points', 'number_box'),
        field(q.allowance, '資格手当 / Allowance (yen)', 'calc_formula', { formula: `{${q.points}} * 1000` }),
        field(q.file, '証明書 / Certificate', 'attach_file'),
      ],
    },
  ];
}
