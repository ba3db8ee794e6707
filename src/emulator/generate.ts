/**
 * `--generate N`: a synthetic company of N members for benchmarks and large tests (DESIGN.md
 * section 3). The same options give the same company, byte for byte: every member draws from its
 * own seeded stream, so members do not change with `files` or with the draws of others. Members
 * and their records are made from the seed when asked (lazy-record.ts) and files on each download
 * (synthetic-files.ts): the company holds only what requests changed, whatever its size.
 *
 * `files: false` gives the same members, departments, layouts and sheet values without any photo
 * or attachment, and without the multiple-record sheet's records (each of them exists to hold a
 * file): the empty company that an export of the full one is restored into.
 */
import { z } from 'zod';
import type { Company } from './company.js';
import { emptyCompanyData, type CompanyData, type Department, type FieldDef, type Member, type SheetRecord, type StoredFile } from './model.js';
import { codesOf, lazyRecord, peekEntry, type LazySource } from './lazy-record.js';
import { SeededRandom, seedOf } from './seeded-random.js';
import { registerBlobGenerator, type BlobEntry } from './blobs.js';
import { photoBases, syntheticCsvParts, syntheticPdfParts, syntheticPhotoParts } from './synthetic-files.js';
import {
  BLOOD_TYPES, CONTRACT_FIELD_IDS, CONTRACT_SHEET_ID, CONTRACT_TERMS, EMPLOYMENT_TYPES, MEMBER_FIELD_IDS,
  QUALIFICATION_CATEGORIES, QUALIFICATION_FIELD_IDS, QUALIFICATION_SHEET_ID, memberFields, sheetDefs,
} from './sample-layout.js';
import { DIVISION_NAMES, ENGLISH_NAMES, FAMILY_NAMES, GIVEN_NAMES, QUALIFICATIONS } from './synthetic-names.js';
import { recalculate } from './routes/formula.js';
import { describeIssues } from '../spec/schemas.js';
import { MAX_FILE_BYTES } from '../spec/limits.js';

/** The smallest photo: a base JPEG (about 3 KB) and its identifying comment fit well below it. */
export const MIN_PHOTO_BYTES = 8192;
/** The smallest attachment: a one-page PDF (about 700 bytes) and its padding object fit below it. */
export const MIN_ATTACHMENT_BYTES = 2048;

const byteRange = (floor: number) =>
  z
    .tuple([z.number().int().min(floor).max(MAX_FILE_BYTES), z.number().int().min(floor).max(MAX_FILE_BYTES)])
    .refine(([min, max]) => min <= max, 'give [min, max] with min <= max');

export const generateOptionsSchema = z.strictObject({
  /** Number of members, coded G000001, G000002, ... */
  members: z.number().int().min(0).max(1_000_000),
  /** Photos and attachments; false gives the same company without files. Default true. */
  files: z.boolean().default(true),
  /** Another seed gives another company of the same shape. Default 1. */
  seed: z.number().int().min(0).max(0xffff_ffff).default(1),
  /** Photo sizes in bytes, [min, max]. Default [20000, 500000]. */
  photo_bytes: byteRange(MIN_PHOTO_BYTES).default([20_000, 500_000]),
  /** Share of members with a photo. Default 0.9. */
  photo_ratio: z.number().min(0).max(1).default(0.9),
  /** Attachments per member, [min, max]: the contract first, then qualification records. Default [1, 3]. */
  attachments_per_member: z
    .tuple([z.number().int().min(0).max(1000), z.number().int().min(0).max(1000)])
    .refine(([min, max]) => min <= max, 'give [min, max] with min <= max')
    .default([1, 3]),
  /** Attachment sizes in bytes, [min, max]. Default [5000, 200000]. */
  attachment_bytes: byteRange(MIN_ATTACHMENT_BYTES).default([5_000, 200_000]),
});
/** As written in a config file or passed in-process: every key but `members` may be left out. */
export type GenerateOptions = z.input<typeof generateOptionsSchema>;
type Settings = z.output<typeof generateOptionsSchema>;

/**
 * Blob generators of generated companies, registered when this module loads, so that blobs
 * restored by `--state-dir` read without a seed run. A generated company holds no blob entries:
 * a download URL's blob id names the member and file, whose arguments are drawn again.
 */
const PHOTO = 'generated-photo';
const PDF = 'generated-pdf';
const CSV = 'generated-csv';
registerBlobGenerator(PHOTO, ((base: number, code: string, seed: number, size: number) =>
  syntheticPhotoParts(base, `${code} seed ${seed}`, size)) as (...args: never[]) => Buffer[]);
registerBlobGenerator(PDF, ((title: string, code: string, detail: string, n: number, seed: number, size: number) =>
  syntheticPdfParts([title, detail, n ? `${code} record ${n}` : code, `Seed ${seed}`], size)) as (...args: never[]) => Buffer[]);
registerBlobGenerator(CSV, ((code: string, n: number, seed: number, size: number) =>
  syntheticCsvParts(`${code} record ${n} seed ${seed}`, size)) as (...args: never[]) => Buffer[]);

/** File names of the n-th qualification record, shared by all members. */
const fileNames = new Map<string, string>();
const numbered = (prefix: string, n: number, ext: string): string => {
  const name = `${prefix}-${n}.${ext}`;
  const shared = fileNames.get(name);
  if (shared) return shared;
  fileNames.set(name, name);
  return name;
};

export function seedGenerated(options: GenerateOptions): (company: Company) => Promise<void> {
  const parsed = generateOptionsSchema.safeParse(options);
  if (!parsed.success) throw new Error(`the generate options are not valid:\n  ${describeIssues(parsed.error).join('\n  ')}`);
  const settings = parsed.data;
  return async (company) => {
    // The base photos are made before any download asks for them (synthetic-files.ts).
    photoBases();
    company.data = new GeneratedCompany(company, settings).run();
  };
}

const memberCode = (index: number): string => `G${String(index).padStart(6, '0')}`;

function departmentTree(members: number): Department[] {
  const count = Math.max(3, Math.round(members / 50));
  const divisions = Math.min(count - 1, Math.max(2, Math.ceil(Math.sqrt(count - 1))));
  const code = (i: number): string => `D${String(i + 1).padStart(4, '0')}`;
  const tree: Department[] = [{ code: code(0), name: '本社 / Head office', parent_code: null, leader_member_code: null, order: 1, memo: '' }];
  const divisionName = (i: number): string => `${DIVISION_NAMES[i % DIVISION_NAMES.length]!}${i >= DIVISION_NAMES.length ? ` ${Math.floor(i / DIVISION_NAMES.length) + 1}` : ''}`;
  for (let i = 0; i < divisions; i += 1) {
    tree.push({ code: code(i + 1), name: divisionName(i), parent_code: code(0), leader_member_code: null, order: i + 1, memo: '' });
  }
  for (let t = 0; t < count - 1 - divisions; t += 1) {
    const division = t % divisions;
    const n = Math.floor(t / divisions) + 1;
    const short = divisionName(division).split(' / ')[0]!;
    tree.push({ code: code(divisions + 1 + t), name: `${short} 第${n}課 / Team ${n}`, parent_code: code(division + 1), leader_member_code: null, order: n, memo: '' });
  }
  return tree;
}

/**
 * Concurrent departments beside `primary`: every eighth member from the second has one (every
 * sixteenth two), so that even a small company has some, as real ones do. They come from a stream
 * of their own, leaving the rest of each member as earlier versions generated it.
 */
function concurrentDepartments(code: string, index: number, seed: number, departments: readonly Department[], primary: string, drawn: string | null): string[] {
  const codes = drawn && drawn !== primary ? [drawn] : [];
  if (index % 8 !== 2) return codes;
  const random = new SeededRandom(seedOf(`${seed}:${code}:concurrent`));
  const wanted = codes.length + (index % 16 === 10 ? 2 : 1);
  const candidates = departments.filter((d) => d.code !== primary && !codes.includes(d.code));
  while (codes.length < wanted && candidates.length) codes.push(candidates.splice(random.int(0, candidates.length - 1), 1)[0]!.code);
  return codes;
}

/** A member; `departments` are those a member can belong to (all but the root); `index` counts from 1. */
function generateMember(code: string, index: number, seed: number, departments: readonly Department[], now: string): Member {
  const random = new SeededRandom(seedOf(`${seed}:${code}:member`));
  const english = random.chance(0.05);
  let name: string;
  let kana: string;
  let gender: string;
  if (english) {
    const person = random.pick(ENGLISH_NAMES);
    [name, kana, gender] = [`${person.name} ${person.family.name}`, `${person.kana} ${person.family.kana}`, person.gender];
  } else {
    const family = random.pick(FAMILY_NAMES);
    const given = random.pick(GIVEN_NAMES);
    [name, kana, gender] = [`${family.name} ${given.name}`, `${family.kana} ${given.kana}`, given.gender];
  }
  const entered = random.date(1995, 2025);
  const retired = random.chance(0.03) ? random.date(Number(entered.slice(0, 4)) + 1, 2026) : '';
  const department = random.pick(departments);
  const sub = random.chance(0.05) ? random.pick(departments).code : null;
  return {
    id: index, code, name, name_kana: kana, mail: `${code.toLowerCase()}@example.com`, entered_date: entered, retired_date: retired,
    gender: random.chance(0.04) ? '' : gender, birthday: random.date(1960, 2003),
    department_code: department.code, sub_department_codes: concurrentDepartments(code, index, seed, departments, department.code, sub),
    custom_fields: {
      [MEMBER_FIELD_IDS.employment]: [random.pick(EMPLOYMENT_TYPES)],
      [MEMBER_FIELD_IDS.bloodType]: [random.pick(BLOOD_TYPES)],
      [MEMBER_FIELD_IDS.extension]: [String(random.int(1000, 9999))],
    },
    updated_at: now,
  };
}

/** The files of one member and the generator of each, for the download URLs that name them. */
interface GeneratedFile {
  file: StoredFile;
  generator: string;
  args: unknown[];
}

/** Everything a generated member holds, made from the seed and its index alone. */
interface MemberSlot {
  member: Member;
  photo?: GeneratedFile;
  contract: SheetRecord;
  contractFile?: GeneratedFile;
  qualifications: { record: SheetRecord; file: GeneratedFile }[];
}

/**
 * The generated company: its members, photos and sheet records are lazy records (lazy-record.ts)
 * made from `slot(index)` when asked, and their files' blob ids name the slot (`<run>-p12`: the
 * photo of member 12), so that a download URL is answered by making the file from the seed again.
 */
class GeneratedCompany {
  readonly data: CompanyData;
  private readonly now: string;
  /** Departments a member can belong to: all but the root. */
  private memberDepartments: readonly Department[] = [];
  /** Blob ids of this seed run start with it: a URL listed before a reset finds nothing after it. */
  private readonly runId = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  private readonly qualificationFields: readonly FieldDef[];
  private lastSlot: { index: number; slot: MemberSlot } | undefined;

  constructor(
    private readonly company: Company,
    private readonly o: Settings,
  ) {
    this.now = company.now();
    this.data = emptyCompanyData(this.now);
    this.qualificationFields = sheetDefs().find((d) => d.id === QUALIFICATION_SHEET_ID)!.fields;
  }

  run(): CompanyData {
    const { data, o } = this;
    data.member_fields = memberFields();
    for (const def of sheetDefs()) data.sheets[String(def.id)] = { def, updated_at: this.now, records: {} };
    data.departments = departmentTree(o.members);
    this.memberDepartments = data.departments.slice(1);
    data.roles = [
      { id: 1, name: 'システム管理者 / Administrator', type: 'Adm' },
      { id: 2, name: '一般 / General', type: 'General' },
    ];
    const source = <T>(holds: (index: number) => boolean, make: (index: number) => T | undefined): LazySource<T> => ({
      count: o.members, codeOf: memberCode, indexOf: this.indexOf, holds, make, sorted: o.members < 1_000_000,
    });
    data.members = lazyRecord(source(() => true, (i) => this.slot(i).member));
    data.photos = lazyRecord(source((i) => o.files && this.draws(i).hasPhoto, (i) => this.slot(i).photo?.file));
    data.sheets[String(CONTRACT_SHEET_ID)]!.records = lazyRecord(source(() => true, (i) => [this.slot(i).contract]));
    data.sheets[String(QUALIFICATION_SHEET_ID)]!.records = lazyRecord(
      source((i) => o.files && this.draws(i).attachments > 1, (i) => this.slot(i).qualifications.map((q) => q.record)),
    );
    this.company.blobs.generatedBy({ entry: (id) => this.blobEntry(id), all: () => this.blobEntries() });
    this.addUsers();
    const optionIds = [...data.member_fields, ...Object.values(data.sheets).flatMap((s) => s.def.fields)].flatMap((f) => (f.options ?? []).map((x) => x.id));
    data.next_ids = { user: data.users.length + 1, webhook: 1, enum_option: Math.max(0, ...optionIds) + 1, task: 1, member: o.members + 1 };
    return data;
  }

  private readonly indexOf = (code: string): number | undefined => {
    const m = /^G(\d{6,7})$/.exec(code);
    if (!m) return undefined;
    const index = Number(m[1]);
    return index >= 1 && index <= this.o.members && memberCode(index) === code ? index : undefined;
  };

  /** The first draws of a member's file stream: whether it has a photo and how many attachments. */
  private draws(index: number): { attachments: number; hasPhoto: boolean } {
    const { o } = this;
    const random = new SeededRandom(seedOf(`${o.seed}:${memberCode(index)}:files`));
    const attachments = random.int(o.attachments_per_member[0], o.attachments_per_member[1]);
    return { attachments, hasPhoto: random.chance(o.photo_ratio) };
  }

  private file(kind: string, generator: string, args: unknown[], size: number, fileName: string): GeneratedFile {
    return { file: { blob: `${this.runId}-${kind}`, file_name: fileName, size, updated_at: this.now }, generator, args };
  }

  /**
   * A member and its files, drawn in the order the company made at start drew them. `filesOnly`
   * (a download) leaves the member's own stream undrawn: no file argument depends on it, and its
   * one date draw in a record takes one step of the file stream whatever the year.
   */
  private slot(index: number, filesOnly = false): MemberSlot {
    const { o } = this;
    const code = memberCode(index);
    const member = filesOnly
      ? ({ code, mail: `${code.toLowerCase()}@example.com`, entered_date: '2000-01-01' } as Member)
      : generateMember(code, index, o.seed, this.memberDepartments, this.now);
    const random = new SeededRandom(seedOf(`${o.seed}:${code}:files`));
    const attachments = random.int(o.attachments_per_member[0], o.attachments_per_member[1]);
    const hasPhoto = random.chance(o.photo_ratio);
    const photoSize = random.int(o.photo_bytes[0], o.photo_bytes[1]);
    const slot: MemberSlot = { member, contract: this.contract(member), qualifications: [] };
    if (o.files && hasPhoto) slot.photo = this.file(`p${index}`, PHOTO, [random.int(0, 1000), code, o.seed, photoSize], photoSize, `${code}.jpg`);
    if (o.files && attachments > 0) {
      const size = random.int(o.attachment_bytes[0], o.attachment_bytes[1]);
      slot.contractFile = this.file(`c${index}`, PDF, ['Employment contract', code, member.mail, 0, o.seed, size], size, 'employment-contract.pdf');
      slot.contract.files[CONTRACT_FIELD_IDS.file] = slot.contractFile.file;
    }
    if (!o.files) return slot;
    for (let n = 1; n < attachments; n += 1) slot.qualifications.push(this.qualification(member, index, n, random));
    return slot;
  }

  /** The single-record sheet: values for every member, the contract PDF when it has files. */
  private contract(member: Member): SheetRecord {
    const c = CONTRACT_FIELD_IDS;
    const values = new SeededRandom(seedOf(`${this.o.seed}:${member.code}:contract`));
    return {
      values: {
        [c.start]: [member.entered_date],
        [c.term]: [values.pick(CONTRACT_TERMS)],
        [c.salary]: [String(values.int(20, 60) * 10_000)],
      },
      files: {},
    };
  }

  /** A multiple-record sheet record holding one file; file names are unique per member. */
  private qualification(member: Member, index: number, n: number, random: SeededRandom): { record: SheetRecord; file: GeneratedFile } {
    const q = QUALIFICATION_FIELD_IDS;
    const name = random.pick(QUALIFICATIONS);
    const record: SheetRecord = {
      values: {
        [q.name]: [name],
        [q.acquired]: [random.date(Number(member.entered_date.slice(0, 4)), 2025)],
        [q.category]: [random.pick(QUALIFICATION_CATEGORIES)],
        [q.points]: [String(random.int(1, 30))],
      },
      files: {},
    };
    recalculate(this.qualificationFields, record);
    const size = random.int(this.o.attachment_bytes[0], this.o.attachment_bytes[1]);
    const file = random.chance(0.7)
      ? this.file(`q${index}-${n}`, PDF, ['Certificate of qualification', member.code, name, n, this.o.seed, size], size, numbered('certificate', n, 'pdf'))
      : this.file(`q${index}-${n}`, CSV, [member.code, n, this.o.seed, size], size, numbered('scores', n, 'csv'));
    record.files[q.file] = file.file;
    return { record, file };
  }

  /** The generated file a blob id names (whether or not it is still current: the blob store knows). */
  private blobEntry(id: string): BlobEntry | undefined {
    const m = /^(.+)-([pcq])(\d+)(?:-(\d+))?$/.exec(id);
    if (!m || m[1] !== this.runId) return undefined;
    const index = Number(m[3]);
    if (!(index >= 1 && index <= this.o.members) || !this.o.files) return undefined;
    // The last slot read here is kept: a member's files are asked for one after the other. It is
    // never handed to a record, so no route can change it.
    if (this.lastSlot?.index !== index) this.lastSlot = { index, slot: this.slot(index, true) };
    const { slot } = this.lastSlot;
    const found = m[2] === 'p' ? slot.photo : m[2] === 'c' ? slot.contractFile : slot.qualifications[Number(m[4]) - 1]?.file;
    if (!found || found.file.blob !== id) return undefined;
    return { id, size: found.file.size, source: { type: 'generated', generator: found.generator, args: found.args } };
  }

  /** The generated files still current, for saving (--state-dir). */
  private *blobEntries(): Generator<BlobEntry> {
    const { data } = this;
    const files = (record: SheetRecord[] | undefined): StoredFile[] => (record ?? []).flatMap((r) => Object.values(r.files));
    for (const code of codesOf(data.members)) {
      const held = [peekEntry(data.photos, code), ...Object.values(data.sheets).flatMap((s) => files(peekEntry(s.records, code)))];
      for (const file of held) {
        const entry = file && this.blobEntry(file.blob);
        if (entry) yield entry;
      }
    }
  }

  /** One administrator linked to the first member, and general users for the next four. */
  private addUsers(): void {
    const codes = Array.from({ length: Math.min(5, this.o.members) }, (_, i) => memberCode(i + 1));
    this.data.users = codes.map((code, i) => ({
      id: i + 1, email: i === 0 ? 'admin@example.com' : `${code.toLowerCase()}@example.com`, member_code: code,
      password: `generated-${code}`, role_id: i === 0 ? 1 : 2, is_active: true, password_locked: false,
      use_smartphone: false, use_native_app: false, use_secure: false, last_login_at: null,
    }));
  }
}
