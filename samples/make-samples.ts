/**
 * Writes the sample company, `samples/company/` (its format: samples/company/README.md):
 * company.json, face photos and the attachments of its sheets. Deterministic: the same script
 * gives the same files, so the output is committed and a change to it shows in review.
 *
 *   npx tsx samples/make-samples.ts
 *
 * The layouts are those of generated companies (src/emulator/sample-layout.ts). Three members
 * hold two qualification records with the same file name: the case in which a partial update of
 * attachments cannot be made (api-v2.md 4.4 Sheets 8).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { fileURLToPath } from 'node:url';
import { ZipArchive } from 'archiver';
import { certificateImage, facePhoto, type HairStyle } from './sample-images.js';
import { pdfDocument } from '../src/emulator/synthetic-files.js';
import {
  BLOOD_TYPES, CONTRACT_FIELD_IDS, CONTRACT_TERMS, EMPLOYMENT_TYPES, MEMBER_FIELD_IDS, QUALIFICATION_CATEGORIES,
  QUALIFICATION_FIELD_IDS, memberFields, sheetDefs,
} from '../src/emulator/sample-layout.js';
import { seedOf } from '../src/emulator/seeded-random.js';
import { TYPE_DETAIL_OF_KIND } from '../src/emulator/routes/member-layout.js';
import type { FieldDef } from '../src/emulator/model.js';

const OUT = join(dirname(fileURLToPath(import.meta.url)), 'company');
/** Zip entries carry this time, so that spreadsheets come out the same on every run. */
const ZIP_TIME = new Date('2026-01-05T09:00:00Z');

type Gender = '男性' | '女性';
type Employment = 0 | 1 | 2 | 3;

interface Person {
  code: string;
  name: string;
  kana: string;
  /** Roman name for mails and documents. */
  roman: string;
  gender: Gender;
  birthday: string;
  entered: string;
  retired?: string;
  department: string;
  sub?: string[];
  employment: Employment;
  hair: HairStyle;
  glasses?: boolean;
  /** No face photo registered. */
  noPhoto?: boolean;
}

const P = (code: string, name: string, kana: string, roman: string, gender: Gender, birthday: string, entered: string, department: string, employment: Employment, hair: HairStyle, extra: Partial<Person> = {}): Person => ({
  code, name, kana, roman, gender, birthday, entered, department, employment, hair, ...extra,
});

const PEOPLE: Person[] = [
  P('A0001', '山田 太郎', 'ヤマダ タロウ', 'Taro Yamada', '男性', '1965-04-12', '1990-04-01', '1000', 0, 'bald', { glasses: true }),
  P('A0002', '佐藤 花子', 'サトウ ハナコ', 'Hanako Sato', '女性', '1972-08-23', '1995-04-01', '1300', 0, 'bob'),
  P('A0003', '鈴木 一郎', 'スズキ イチロウ', 'Ichiro Suzuki', '男性', '1978-01-30', '2001-04-01', '1100', 0, 'short'),
  P('A0004', '高橋 美咲', 'タカハシ ミサキ', 'Misaki Takahashi', '女性', '1985-11-05', '2008-04-01', '1110', 0, 'long'),
  P('A0005', '田中 健太', 'タナカ ケンタ', 'Kenta Tanaka', '男性', '1990-06-17', '2013-04-01', '1110', 0, 'short'),
  P('A0006', '伊藤 彩', 'イトウ アヤ', 'Aya Ito', '女性', '1993-03-02', '2016-04-01', '1120', 0, 'bun'),
  P('A0007', '渡辺 翔太', 'ワタナベ ショウタ', 'Shota Watanabe', '男性', '1995-09-14', '2018-04-01', '1120', 0, 'short', { glasses: true }),
  P('A0008', '山本 陽子', 'ヤマモト ヨウコ', 'Yoko Yamamoto', '女性', '1980-12-25', '2005-10-01', '1200', 0, 'bob', { glasses: true }),
  P('A0009', '中村 大輔', 'ナカムラ ダイスケ', 'Daisuke Nakamura', '男性', '1987-07-07', '2011-04-01', '1210', 0, 'short'),
  P('A0010', '小林 直樹', 'コバヤシ ナオキ', 'Naoki Kobayashi', '男性', '1991-02-28', '2015-07-01', '1210', 0, 'short'),
  P('A0011', 'Emily Clark', 'エミリー クラーク', 'Emily Clark', '女性', '1989-05-19', '2019-09-01', '1210', 0, 'long'),
  P('A0012', '加藤 結衣', 'カトウ ユイ', 'Yui Kato', '女性', '1997-10-10', '2020-04-01', '1220', 0, 'long'),
  P('A0013', '吉田 拓也', 'ヨシダ タクヤ', 'Takuya Yoshida', '男性', '1994-04-04', '2019-04-01', '1220', 0, 'short', { glasses: true }),
  P('A0014', 'James Wilson', 'ジェームズ ウィルソン', 'James Wilson', '男性', '1984-08-08', '2021-01-15', '1220', 1, 'short', { sub: ['1100'] }),
  P('A0015', '佐々木 恵子', 'ササキ ケイコ', 'Keiko Sasaki', '女性', '1976-03-15', '2000-04-01', '1300', 0, 'bun'),
  P('A0016', '山口 誠', 'ヤマグチ マコト', 'Makoto Yamaguchi', '男性', '1982-09-09', '2007-04-01', '1300', 0, 'short'),
  P('A0017', '松本 葵', 'マツモト アオイ', 'Aoi Matsumoto', '女性', '1999-12-01', '2022-04-01', '1300', 0, 'long', { noPhoto: true }),
  P('A0018', '井上 蓮', 'イノウエ レン', 'Ren Inoue', '男性', '2000-05-05', '2023-04-01', '1110', 1, 'short'),
  P('A0019', '木村 由美', 'キムラ ユミ', 'Yumi Kimura', '女性', '1988-02-14', '2012-04-01', '1120', 0, 'bob'),
  P('A0020', '林 和也', 'ハヤシ カズヤ', 'Kazuya Hayashi', '男性', '1979-11-11', '2003-04-01', '1200', 0, 'bald', { sub: ['1210'] }),
  P('A0021', '斎藤 真由美', 'サイトウ マユミ', 'Mayumi Saito', '女性', '1986-06-06', '2010-04-01', '1100', 0, 'long', { glasses: true }),
  P('A0022', '清水 悠斗', 'シミズ ユウト', 'Yuto Shimizu', '男性', '1998-07-21', '2021-04-01', '1210', 0, 'short'),
  P('A0023', 'Olivia Brown', 'オリビア ブラウン', 'Olivia Brown', '女性', '1992-01-09', '2022-10-01', '1100', 3, 'bob'),
  P('A0024', '森 浩二', 'モリ コウジ', 'Koji Mori', '男性', '1970-10-30', '1993-04-01', '1000', 0, 'bald', { retired: '2025-03-31', noPhoto: true }),
  P('A0025', '池田 愛', 'イケダ アイ', 'Ai Ikeda', '女性', '1983-04-22', '2009-04-01', '1300', 0, 'long'),
  P('A0026', '橋本 剛', 'ハシモト ツヨシ', 'Tsuyoshi Hashimoto', '男性', '1996-08-30', '2024-04-01', '1220', 2, 'short'),
  P('A0027', '阿部 さくら', 'アベ サクラ', 'Sakura Abe', '女性', '2001-03-27', '2024-04-01', '1110', 0, 'bun'),
  P('A0028', 'Daniel Miller', 'ダニエル ミラー', 'Daniel Miller', '男性', '1990-12-03', '2023-06-01', '1210', 1, 'short', { glasses: true }),
  P('A0029', '石川 優子', 'イシカワ ユウコ', 'Yuko Ishikawa', '女性', '1975-05-31', '1999-04-01', '1120', 0, 'bob', { retired: '2024-12-31', noPhoto: true }),
  P('A0030', '前田 翼', 'マエダ ツバサ', 'Tsubasa Maeda', '男性', '2002-09-18', '2025-04-01', '1220', 2, 'short', { noPhoto: true }),
];

const DEPARTMENTS = [
  { code: '1000', name: '本社 / Head Office', parent_code: null, leader_member_code: 'A0001', order: 1, memo: '東京都千代田区' },
  { code: '1100', name: '営業部 / Sales', parent_code: '1000', leader_member_code: 'A0003', order: 1, memo: '' },
  { code: '1110', name: '東京営業課 / Tokyo Sales', parent_code: '1100', leader_member_code: 'A0004', order: 1, memo: '' },
  { code: '1120', name: '大阪営業課 / Osaka Sales', parent_code: '1100', leader_member_code: 'A0019', order: 2, memo: '大阪支店' },
  { code: '1200', name: '開発部 / Engineering', parent_code: '1000', leader_member_code: 'A0008', order: 2, memo: '' },
  // A memo may be null as well as "" (wire-format.md, "Real-client facts"); the service answers what was sent.
  { code: '1210', name: 'Platform Team', parent_code: '1200', leader_member_code: 'A0009', order: 1, memo: null },
  { code: '1220', name: 'Mobile Team', parent_code: '1200', leader_member_code: 'A0013', order: 2, memo: '' },
  { code: '1300', name: '管理部 / Administration', parent_code: '1000', leader_member_code: 'A0002', order: 3, memo: '総務・人事・経理' },
];

/** A file of a record: its path in the seed folder and its bytes. */
interface Attachment {
  path: string;
  data: () => Promise<Buffer>;
}

const files: Attachment[] = [];

function attach(code: string, name: string, data: () => Promise<Buffer>, folder?: string): { file: string } {
  const path = ['files', code, ...(folder ? [folder] : []), name].join('/');
  files.push({ path, data });
  return { file: path };
}

const pdf = (lines: string[]) => async (): Promise<Buffer> => pdfDocument(lines);
const text = (content: string) => async (): Promise<Buffer> => Buffer.from(content, 'utf8');

/** A minimal spreadsheet: the five OOXML parts Excel needs, strings inline. */
function xlsx(title: string, rows: (string | number)[][]) {
  return async (): Promise<Buffer> => {
    const escape = (s: string): string => s.replace(/[<>&]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;' })[c]!);
    const column = (i: number): string => String.fromCharCode(65 + i);
    const sheetRows = rows
      .map((row, r) => `<row r="${r + 1}">${row.map((cell, c) => {
        const ref = `${column(c)}${r + 1}`;
        return typeof cell === 'number' ? `<c r="${ref}"><v>${cell}</v></c>` : `<c r="${ref}" t="inlineStr"><is><t>${escape(cell)}</t></is></c>`;
      }).join('')}</row>`)
      .join('');
    const head = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
    const rel = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
    const parts: [string, string][] = [
      ['[Content_Types].xml', `${head}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`],
      ['_rels/.rels', `${head}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="${rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>`],
      ['xl/workbook.xml', `${head}<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="${rel}"><sheets><sheet name="${escape(title)}" sheetId="1" r:id="rId1"/></sheets></workbook>`],
      ['xl/_rels/workbook.xml.rels', `${head}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="${rel}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`],
      ['xl/worksheets/sheet1.xml', `${head}<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${sheetRows}</sheetData></worksheet>`],
    ];
    const archive = new ZipArchive({ zlib: { level: 9 } });
    const zipped = buffer(archive);
    for (const [name, content] of parts) archive.append(content, { name, date: ZIP_TIME });
    await archive.finalize();
    return zipped;
  };
}

const person = (code: string): Person => PEOPLE.find((p) => p.code === code)!;

/** The single-record sheet: every member but one has a contract record; most hold the signed PDF. */
function contractRecords(): unknown[] {
  const c = CONTRACT_FIELD_IDS;
  const noFile = new Set(['A0026', 'A0030']);
  const japaneseName = new Set(['A0004', 'A0015']);
  return PEOPLE.filter((p) => p.code !== 'A0017').map((p, i) => {
    const term = p.employment === 0 ? CONTRACT_TERMS[0]! : p.employment === 1 ? CONTRACT_TERMS[1]! : CONTRACT_TERMS[2]!;
    const salary = p.employment === 2 ? 180_000 : 250_000 + ((seedOf(p.code) % 30) * 10_000);
    const custom_fields: unknown[] = [
      { id: c.start, values: [p.entered] },
      { id: c.term, values: [term] },
      { id: c.salary, values: [String(salary)] },
    ];
    if (!noFile.has(p.code)) {
      const name = japaneseName.has(p.code) ? '雇用契約書.pdf' : 'employment-contract.pdf';
      const lines = ['Employment Contract', '', `Employee: ${p.roman} (${p.code})`, `Start date: ${p.entered}`, `Term: ${term.split(' / ')[1]}`, `Monthly salary: JPY ${salary.toLocaleString('en-US')}`, '', `Contract no. C-${String(i + 1).padStart(4, '0')}`];
      custom_fields.push({ id: c.file, ...attach(p.code, name, pdf(lines)) });
    }
    return { code: p.code, records: [{ custom_fields }] };
  });
}

type Category = 0 | 1 | 2;
interface Qualification {
  name: string;
  acquired: string;
  category: Category;
  points: number;
  /** File name and how to make it; the folder keeps same-named files of one member apart. */
  file?: { name: string; folder?: string; kind: 'pdf' | 'png' | 'jpg' | 'xlsx' | 'csv' };
}

const Q = (name: string, acquired: string, category: Category, points: number, file?: Qualification['file']): Qualification => ({ name, acquired, category, points, file });

const QUALIFICATIONS: Record<string, Qualification[]> = {
  A0003: [
    Q('普通自動車免許 / Driving licence', '1997-08-10', 1, 1, { name: 'certificate.pdf', kind: 'pdf' }),
    Q('TOEIC 730', '2018-06-24', 2, 5, { name: 'toeic-score.png', kind: 'png' }),
    Q('英検2級 / Eiken Grade 2', '1995-02-12', 1, 2),
  ],
  A0005: [
    Q('日商簿記2級 / Bookkeeping Grade 2', '2014-11-16', 1, 10, { name: 'certificate.pdf', folder: 'boki', kind: 'pdf' }),
    Q('販売士2級 / Retail Sales Grade 2', '2016-02-21', 1, 5, { name: 'certificate.pdf', folder: 'hanbaishi', kind: 'pdf' }),
  ],
  A0008: [
    Q('応用情報技術者 / Applied IT Engineer', '2006-12-15', 0, 20, { name: 'certificate.pdf', folder: 'ap', kind: 'pdf' }),
    Q('AWS Solutions Architect', '2019-03-08', 2, 15, { name: 'aws-sa.pdf', kind: 'pdf' }),
    Q('情報処理安全確保支援士 / Security Specialist', '2017-06-15', 0, 30, { name: 'certificate.pdf', folder: 'sc', kind: 'pdf' }),
  ],
  A0009: [
    Q('基本情報技術者 / Fundamental IT Engineer', '2011-10-20', 0, 10, { name: 'fe-certificate.jpg', kind: 'jpg' }),
    Q('TOEIC 860', '2020-01-12', 2, 8, { name: 'scores.xlsx', kind: 'xlsx' }),
  ],
  A0010: [Q('AWS Developer', '2021-09-30', 2, 10, { name: 'aws-certification.pdf', kind: 'pdf' })],
  A0011: [
    Q('日本語能力試験 N2 / JLPT N2', '2018-12-02', 1, 10, { name: 'jlpt-n2.pdf', kind: 'pdf' }),
    Q('PMP', '2016-05-20', 2, 20, { name: 'pmp.pdf', kind: 'pdf' }),
  ],
  A0012: [Q('基本情報技術者 / Fundamental IT Engineer', '2019-11-20', 0, 10, { name: '合格証書.pdf', kind: 'pdf' })],
  A0013: [Q('Android Developer', '2020-07-01', 2, 5)],
  A0014: [Q('PMP', '2012-04-18', 2, 20, { name: 'pmp-certificate.pdf', kind: 'pdf' })],
  A0015: [
    Q('社会保険労務士 / Labour Consultant', '2004-11-05', 0, 30, { name: 'sharoushi.pdf', kind: 'pdf' }),
    Q('衛生管理者 / Health Supervisor', '2008-07-18', 0, 10, { name: 'eisei-kanri.png', kind: 'png' }),
  ],
  A0016: [
    Q('日商簿記1級 / Bookkeeping Grade 1', '2009-11-15', 1, 25, { name: 'boki1.pdf', kind: 'pdf' }),
    Q('FP2級 / Financial Planner Grade 2', '2013-09-08', 0, 8, { name: 'study-log.csv', kind: 'csv' }),
  ],
  A0019: [Q('宅地建物取引士 / Real Estate Notary', '2013-12-04', 0, 20, { name: 'takken.pdf', kind: 'pdf' })],
  A0020: [
    Q('ITストラテジスト / IT Strategist', '2010-06-18', 0, 30, { name: 'strategist.pdf', kind: 'pdf' }),
    Q('社内研修 / In-house training', '2024-03-29', 2, 1, { name: 'training-hours.xlsx', kind: 'xlsx' }),
  ],
  A0021: [Q('TOEIC 905', '2022-05-29', 2, 10, { name: 'scores.csv', kind: 'csv' })],
  A0022: [
    Q('基本情報技術者 / Fundamental IT Engineer', '2021-06-25', 0, 10, { name: 'certificate.pdf', folder: 'fe', kind: 'pdf' }),
    Q('応用情報技術者 / Applied IT Engineer', '2023-06-23', 0, 20, { name: 'certificate.pdf', folder: 'ap', kind: 'pdf' }),
  ],
  A0025: [
    Q('キャリアコンサルタント / Career Consultant', '2018-08-03', 0, 15, { name: 'career-consultant.pdf', kind: 'pdf' }),
    Q('衛生管理者 / Health Supervisor', '2012-07-20', 0, 10, { name: 'eisei-kanri.pdf', kind: 'pdf' }),
    Q('研修計画 / Training plan', '2025-04-01', 2, 1, { name: 'training-plan.xlsx', kind: 'xlsx' }),
  ],
  A0028: [Q('日本語能力試験 N1 / JLPT N1', '2023-12-03', 1, 15, { name: 'jlpt-n1.jpg', kind: 'jpg' })],
};

function qualificationFile(p: Person, q: Qualification, file: NonNullable<Qualification['file']>): () => Promise<Buffer> {
  const english = q.name.includes(' / ') ? q.name.split(' / ')[1]! : q.name;
  switch (file.kind) {
    case 'pdf':
      return pdf(['Certificate of Qualification', '', english, `Holder: ${p.roman} (${p.code})`, `Date of acquisition: ${q.acquired}`]);
    case 'png':
    case 'jpg':
      return () => certificateImage(english, p.roman, q.acquired, file.kind as 'png' | 'jpg');
    case 'xlsx':
      return xlsx('Scores', [['Date', 'Subject', 'Score'], [q.acquired, english, 100 + (seedOf(p.code + q.name) % 800)], ['2025-03-31', 'Review', 42]]);
    case 'csv':
      return text(`date,subject,hours\n${q.acquired},${english},12\n2024-10-01,"Review, part 1",3\n2024-11-01,"Review, part 2",4.5\n`);
  }
}

function qualificationRecords(): unknown[] {
  const q = QUALIFICATION_FIELD_IDS;
  return Object.entries(QUALIFICATIONS).map(([code, list]) => ({
    code,
    records: list.map((item) => {
      const custom_fields: unknown[] = [
        { id: q.name, values: [item.name] },
        { id: q.acquired, values: [item.acquired] },
        { id: q.category, values: [QUALIFICATION_CATEGORIES[item.category]!] },
        { id: q.points, values: [String(item.points)] },
      ];
      if (item.file) custom_fields.push({ id: q.file, ...attach(code, item.file.name, qualificationFile(person(code), item, item.file), item.file.folder) });
      return { custom_fields };
    }),
  }));
}

function members(): unknown[] {
  const m = MEMBER_FIELD_IDS;
  return PEOPLE.map((p) => ({
    code: p.code,
    name: p.name,
    name_kana: p.kana,
    mail: `${p.roman.toLowerCase().split(' ').join('.')}@example.com`,
    entered_date: p.entered,
    retired_date: p.retired ?? '',
    gender: p.gender,
    birthday: p.birthday,
    department: { code: p.department },
    sub_departments: (p.sub ?? []).map((code) => ({ code })),
    custom_fields: [
      { id: m.employment, values: [EMPLOYMENT_TYPES[p.employment]!] },
      { id: m.bloodType, values: [BLOOD_TYPES[seedOf(p.code) % BLOOD_TYPES.length]!] },
      { id: m.extension, values: [String(2000 + Number(p.code.slice(1)))] },
    ],
  }));
}

/** Fields with their kinds spelt as the service's `type_detail` (`pull_down`), which seeds accept. */
function wireKinds(fields: FieldDef[]): Record<string, unknown>[] {
  return fields.map((f) => ({ ...f, kind: TYPE_DETAIL_OF_KIND[f.kind] }));
}

function company(): Record<string, unknown> {
  const [contract, qualifications] = sheetDefs();
  return {
    description: 'The sample company of wds-files. Written by samples/make-samples.ts: change that script and run it again rather than editing this file.',
    // Files keep one timestamp across emulator starts, so a rerun of an export finds them unchanged.
    seed_time: '2026-04-01 09:00:00',
    auto_enable_native_app: false,
    departments: DEPARTMENTS,
    roles: [
      { id: 1, name: 'システム管理者 / Administrator', type: 'Adm' },
      // The service's spelling of a general role (wire-format.md, "Real-client facts").
      { id: 2, name: '人事担当 / HR staff', type: '一般' },
      { id: 3, name: '一般社員 / Employee', type: '一般' },
    ],
    users: [
      { id: 1, email: 'ai.ikeda@example.com', member_code: 'A0025', password: 'sample-Adm-2026', role_id: 1, use_smartphone: true, last_login_at: '2026-03-30 09:12:44' },
      { id: 2, email: 'keiko.sasaki@example.com', member_code: 'A0015', password: 'sample-hr-2026', role_id: 2, last_login_at: '2026-03-28 17:40:02' },
      { id: 3, email: 'makoto.yamaguchi@example.com', member_code: 'A0016', password: 'sample-hr-2026', role_id: 2, use_smartphone: true, last_login_at: '2026-03-31 08:05:10' },
      { id: 4, email: 'kenta.tanaka@example.com', member_code: 'A0005', password: 'sample-emp-2026', role_id: 3, use_native_app: true, last_login_at: '2026-03-25 12:00:00' },
      { id: 5, email: 'emily.clark@example.com', member_code: 'A0011', password: 'sample-emp-2026', role_id: 3, last_login_at: null },
      { id: 6, email: 'auditor@audit.example.com', member_code: null, password: 'sample-audit-2026', role_id: 3, is_active: false, last_login_at: '2025-06-30 15:20:00' },
    ],
    member_fields: wireKinds(memberFields()),
    members: members(),
    sheets: [
      { ...contract, fields: wireKinds(contract!.fields), member_data: contractRecords() },
      { ...qualifications, fields: wireKinds(qualifications!.fields), member_data: qualificationRecords() },
    ],
    advanced_permissions: {
      member: [
        { user_id: 2, add_codes: ['A0001', 'A0002'], exclusion_codes: ['A0025'] },
        { user_id: 3, add_codes: ['A0024', 'A0029'], exclusion_codes: [] },
      ],
      department: [
        { user_id: 4, add_codes: ['1110'], exclusion_codes: [] },
        { user_id: 5, add_codes: ['1210', '1220'], exclusion_codes: ['1200'] },
      ],
    },
    webhooks: [],
  };
}

async function main(): Promise<void> {
  for (const part of ['company.json', 'photos', 'files']) await rm(join(OUT, part), { recursive: true, force: true });
  const data = company();
  await mkdir(join(OUT, 'photos'), { recursive: true });
  await writeFile(join(OUT, 'company.json'), `${JSON.stringify(data, null, 2)}\n`);
  let bytes = 0;
  for (const p of PEOPLE.filter((x) => !x.noPhoto)) {
    const photo = await facePhoto({ seed: seedOf(p.code), hair: p.hair, glasses: p.glasses });
    await writeFile(join(OUT, 'photos', `${p.code}.jpg`), photo);
    bytes += photo.length;
  }
  for (const file of files) {
    const content = await file.data();
    await mkdir(dirname(join(OUT, file.path)), { recursive: true });
    await writeFile(join(OUT, file.path), content);
    bytes += content.length;
  }
  const photos = PEOPLE.filter((x) => !x.noPhoto).length;
  console.log(`wrote ${OUT}: ${PEOPLE.length} members, ${photos} photos, ${files.length} attachments, ${(bytes / 1024).toFixed(0)} KiB of files`);
}

await main();
