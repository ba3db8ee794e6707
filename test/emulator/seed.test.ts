import { createHash } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { Company, type CompanySettings } from '../../src/emulator/company.js';
import { Clock } from '../../src/emulator/clock.js';
import { BlobStore } from '../../src/emulator/blobs.js';
import { DEFAULT_TASK_TIMING } from '../../src/emulator/tasks.js';
import { stateView } from '../../src/emulator/control.js';
import { seedFromDirectory } from '../../src/emulator/seed.js';
import { MIN_ATTACHMENT_BYTES, MIN_PHOTO_BYTES, seedGenerated, type GenerateOptions } from '../../src/emulator/generate.js';
import { minPhotoBytes, syntheticCsv, syntheticPdf, syntheticPhoto } from '../../src/emulator/synthetic-files.js';
import { CONTRACT_FIELD_IDS, QUALIFICATION_FIELD_IDS } from '../../src/emulator/sample-layout.js';
import { heldCount, peekEntry, sortedCodes } from '../../src/emulator/lazy-record.js';

const SAMPLE = resolve('samples/company');

async function load(seed: CompanySettings['seed'], allowHttpWebhooks = false): Promise<Company> {
  const company = new Company(
    {
      name: 'test', consumerKey: 'k', consumerSecret: 's',
      limits: { requestsPerHour: 3000, updatesPerMinute: 5, tokensPerHour: 1000 },
      taskTiming: DEFAULT_TASK_TIMING, maintenance: false, allowHttpWebhooks, seed,
    },
    new Clock({ start: Date.parse('2026-04-01T01:00:00Z') }),
    () => undefined,
  );
  await company.reset();
  return company;
}

const generated = (options: GenerateOptions): Promise<Company> => load(seedGenerated(options));
const sha = (data: Buffer): string => createHash('sha256').update(data).digest('hex');
/** The files of a company without their timestamps, for comparing two loads. */
const files = (company: Company) => {
  const view = stateView(company);
  return {
    members: view.members.map((m) => ({ code: m.code, photo: m.photo && { ...m.photo, updated_at: '' } })),
    attachments: view.attachments.map((a) => ({ ...a, updated_at: '' })),
  };
};
const membersWithoutTime = (company: Company) => Object.values(company.data.members).map((m) => ({ ...m, updated_at: '' }));

describe('the sample company (samples/company)', () => {
  it('loads with the expected members, departments, layouts, users and files', async () => {
    const company = await load(seedFromDirectory(SAMPLE));
    const { data } = company;
    expect(Object.keys(data.members)).toHaveLength(30);
    expect(data.departments).toHaveLength(8);
    expect(data.roles.map((r) => r.type)).toEqual(['Adm', 'General', 'General']);
    expect(data.users).toHaveLength(6);
    expect(data.users.filter((u) => data.roles.find((r) => r.id === u.role_id)?.type === 'Adm').map((u) => u.member_code)).toEqual(['A0025']);
    expect(data.advanced_permissions.member.length + data.advanced_permissions.department.length).toBe(4);
    expect(data.member_fields.find((f) => f.kind === 'pulldown')?.options?.length).toBeGreaterThan(1);
    expect(Object.values(data.sheets).map((s) => s.def.record_type)).toEqual([0, 1]);
    const view = stateView(company);
    expect(view.members.filter((m) => m.photo)).toHaveLength(26);
    expect(view.attachments.filter((a) => a.sheet_id === 1)).toHaveLength(27);
    expect(view.attachments.filter((a) => a.sheet_id === 2)).toHaveLength(28);
    const kinds = new Set(view.attachments.map((a) => a.file_name.slice(a.file_name.lastIndexOf('.') + 1)));
    expect([...kinds].sort()).toEqual(['csv', 'jpg', 'pdf', 'png', 'xlsx']);
  });

  it('sets the next ids beyond the seeded ones', async () => {
    const { data } = await load(seedFromDirectory(SAMPLE));
    expect(data.next_ids.user).toBe(7);
    const optionIds = [...data.member_fields, ...Object.values(data.sheets).flatMap((s) => s.def.fields)].flatMap((f) => (f.options ?? []).map((o) => o.id));
    expect(data.next_ids.enum_option).toBe(Math.max(...optionIds) + 1);
  });

  it('has members holding two records with the same file name (api-v2.md 4.4 Sheets 8)', async () => {
    const { data } = await load(seedFromDirectory(SAMPLE));
    const sheet = data.sheets['2']!;
    const holders = Object.entries(sheet.records)
      .filter(([, records]) => {
        const names = records.map((r) => r.files[QUALIFICATION_FIELD_IDS.file]?.file_name).filter(Boolean);
        return new Set(names).size < names.length;
      })
      .map(([code]) => code);
    expect(holders).toEqual(['A0005', 'A0008', 'A0022']);
  });

  it('computes formula parts from the seeded numbers (api-v2.md 4.4 Sheets 11)', async () => {
    const { data } = await load(seedFromDirectory(SAMPLE));
    const first = data.sheets['2']!.records['A0005']![0]!;
    expect(first.values[QUALIFICATION_FIELD_IDS.allowance]).toEqual([String(Number(first.values[QUALIFICATION_FIELD_IDS.points]![0]) * 1000)]);
  });

  it('serves every photo as a JPEG that decodes, and files byte for byte as on disk', async () => {
    const company = await load(seedFromDirectory(SAMPLE));
    for (const [code, photo] of Object.entries(company.data.photos)) {
      const bytes = company.blobs.read(photo.blob);
      const { info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
      expect([info.width, info.height], code).toEqual([400, 500]);
      expect(bytes.length).toBeGreaterThan(20_000);
      expect(bytes.length).toBeLessThan(80_000);
      expect(photo.file_name).toBe(`${code}.jpg`);
    }
    const contract = company.data.sheets['1']!.records['A0001']![0]!.files[CONTRACT_FIELD_IDS.file]!;
    const onDisk = await readFile(join(SAMPLE, 'files/A0001/employment-contract.pdf'));
    expect(sha(company.blobs.read(contract.blob))).toBe(sha(onDisk));
  });

  it('stays under 3 MB', async () => {
    const company = await load(seedFromDirectory(SAMPLE));
    const view = stateView(company);
    const total = view.members.reduce((n, m) => n + (m.photo?.size ?? 0), 0) + view.attachments.reduce((n, a) => n + a.size, 0);
    expect(total).toBeLessThan(3 * 1024 * 1024);
  });
});

describe('seed folder errors name the file and the problem', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  /** A copy of the sample company with company.json changed by `change`. */
  async function variant(change: (json: any) => void): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'wds-seed-'));
    dirs.push(dir);
    await cp(SAMPLE, dir, { recursive: true });
    const json = JSON.parse(await readFile(join(dir, 'company.json'), 'utf8'));
    change(json);
    await writeFile(join(dir, 'company.json'), JSON.stringify(json));
    return dir;
  }

  const failure = async (dir: string): Promise<string> => {
    const error = await load(seedFromDirectory(dir)).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(Error);
    return error!.message;
  };

  it('a value of the wrong type, with its path', async () => {
    const message = await failure(await variant((j) => (j.members[3].mail = 5)));
    expect(message).toContain('company.json: members.3.mail');
  });

  it('an unknown key (a typo is not silently ignored)', async () => {
    const message = await failure(await variant((j) => (j.members[0].departmnet = { code: '1000' })));
    expect(message).toMatch(/company\.json: members\.0.*departmnet/);
  });

  it('a member in a department that does not exist (member registration rules)', async () => {
    const message = await failure(await variant((j) => (j.members[2].department = { code: '9999' })));
    expect(message).toMatch(/company\.json: members\.2: member A0003: department "9999" does not exist/);
  });

  it('a pulldown value that is not an option of the field', async () => {
    const message = await failure(await variant((j) => (j.sheets[1].member_data[0].records[0].custom_fields[2].values = ['Unknown'])));
    expect(message).toMatch(/company\.json: sheets\.1\.member_data\.0\.records\.0\.custom_fields\.2\.values: field 1303 .*"Unknown"/);
  });

  it('a file that does not exist, and one outside the folder', async () => {
    const missing = await failure(await variant((j) => (j.sheets[0].member_data[0].records[0].custom_fields[3].file = 'files/A0001/missing.pdf')));
    expect(missing).toMatch(/sheets\.0\.member_data\.0\.records\.0\.custom_fields\.3\.file: files\/A0001\/missing\.pdf does not exist/);
    const outside = await failure(await variant((j) => (j.sheets[0].member_data[0].records[0].custom_fields[3].file = '../company.json')));
    expect(outside).toMatch(/must stay inside the seed folder/);
  });

  it('a value given for a formula part, and two records on a single-record sheet', async () => {
    const formula = await failure(await variant((j) => j.sheets[1].member_data[0].records[0].custom_fields.push({ id: QUALIFICATION_FIELD_IDS.allowance, values: ['1'] })));
    expect(formula).toMatch(/formula part/);
    const two = await failure(await variant((j) => j.sheets[0].member_data[0].records.push({ custom_fields: [] })));
    expect(two).toMatch(/sheets\.0\.member_data\.0\.records: sheet 1 is a single-record sheet/);
  });

  it('a department tree with a cycle, a duplicate member, a user of an unknown role and a bad mail', async () => {
    const message = await failure(
      await variant((j) => {
        j.departments[0].parent_code = '1100';
        j.members.push({ ...j.members[0] });
        j.users[1].role_id = 99;
        j.users[2].email = 'not-a-mail';
      }),
    );
    expect(message).toMatch(/users\.2\.email: "not-a-mail" is not a mail address/);
    expect(message).toMatch(/departments\.0\.parent_code: department "1000" is its own ancestor/);
    expect(message).toMatch(/members\.30: member code "A0001" appears more than once/);
    expect(message).toMatch(/users\.1\.role_id: role 99 does not exist/);
  });

  it('a photo of no member, and a photo that is not a JPEG', async () => {
    const dir = await variant(() => undefined);
    await cp(join(dir, 'photos/A0001.jpg'), join(dir, 'photos/Z9999.jpg'));
    await writeFile(join(dir, 'photos/A0002.jpg'), 'not an image');
    const message = await failure(dir);
    expect(message).toContain('photos/Z9999.jpg: no member has the code Z9999');
    expect(message).toContain('photos/A0002.jpg: is not a JPEG image');
  });

  it('a company.json that is not JSON', async () => {
    const dir = await variant(() => undefined);
    await writeFile(join(dir, 'company.json'), '{"members": [');
    expect(await failure(dir)).toMatch(/company\.json: is not valid JSON/);
  });

  it('changes nothing when the seed fails', async () => {
    const dir = await variant((j) => (j.members[0].gender = 'unknown'));
    const company = await load(seedFromDirectory(SAMPLE));
    const before = company.data;
    await expect(seedFromDirectory(dir)(company)).rejects.toThrow(/gender/);
    expect(company.data).toBe(before);
  });
});

describe('generated companies (--generate N)', () => {
  it('are the same on every load: same members, same bytes', async () => {
    const [a, b] = [await generated({ members: 200 }), await generated({ members: 200 })];
    expect(files(a)).toEqual(files(b));
    expect(membersWithoutTime(a)).toEqual(membersWithoutTime(b));
    const other = await generated({ members: 200, seed: 2 });
    expect(files(other).members[0]!.photo?.sha256).not.toBe(files(a).members[0]!.photo?.sha256);
  });

  it('have the requested members, departments, size ranges and photo ratio', async () => {
    const company = await generated({ members: 200 });
    const { data } = company;
    expect(Object.keys(data.members)).toHaveLength(200);
    expect(Object.keys(data.members)[0]).toBe('G000001');
    expect(data.departments).toHaveLength(4);
    const view = stateView(company);
    const photos = view.members.flatMap((m) => (m.photo ? [m.photo] : []));
    expect(photos.length / 200).toBeGreaterThan(0.8);
    expect(photos.length / 200).toBeLessThan(0.97);
    for (const p of photos) {
      expect(p.size).toBeGreaterThanOrEqual(20_000);
      expect(p.size).toBeLessThanOrEqual(500_000);
    }
    expect(new Set(photos.map((p) => p.sha256)).size).toBe(photos.length);
    const perMember = new Map<string, number>();
    for (const a of view.attachments) {
      expect(a.size).toBeGreaterThanOrEqual(5_000);
      expect(a.size).toBeLessThanOrEqual(200_000);
      perMember.set(a.code, (perMember.get(a.code) ?? 0) + 1);
    }
    expect(perMember.size).toBe(200);
    expect(Math.min(...perMember.values())).toBe(1);
    expect(Math.max(...perMember.values())).toBe(3);
  });

  it('follow the size, ratio and count options', async () => {
    const company = await generated({
      members: 100, photo_bytes: [9000, 9100], photo_ratio: 0.3, attachments_per_member: [2, 2], attachment_bytes: [3000, 3100], seed: 7,
    });
    const view = stateView(company);
    const photos = view.members.filter((m) => m.photo);
    expect(photos.length).toBeGreaterThan(15);
    expect(photos.length).toBeLessThan(45);
    expect(photos.every((m) => m.photo!.size >= 9000 && m.photo!.size <= 9100)).toBe(true);
    expect(view.attachments).toHaveLength(200);
    expect(view.attachments.every((a) => a.size >= 3000 && a.size <= 3100)).toBe(true);
  });

  it('files: false gives the same members and layouts, and no files', async () => {
    const [full, empty] = [await generated({ members: 200 }), await generated({ members: 200, files: false })];
    expect(membersWithoutTime(empty)).toEqual(membersWithoutTime(full));
    expect(empty.data.departments).toEqual(full.data.departments);
    expect(empty.data.sheets['1']!.def).toEqual(full.data.sheets['1']!.def);
    const view = stateView(empty);
    expect(view.members.every((m) => m.photo === null)).toBe(true);
    expect(view.attachments).toEqual([]);
    expect(Object.keys(empty.data.sheets['2']!.records)).toEqual([]);
    expect(Object.keys(empty.data.sheets['1']!.records)).toHaveLength(200);
  });

  it('make photos that decode with sharp, and PDFs and CSVs of the right shape', async () => {
    const company = await generated({ members: 40 });
    for (const photo of Object.values(company.data.photos).slice(0, 15)) {
      const bytes = company.blobs.read(photo.blob);
      expect(bytes.length).toBe(photo.size);
      const { info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
      expect([info.width, info.height]).toEqual([320, 400]);
    }
    const all = Object.values(company.data.sheets).flatMap((s) => Object.values(s.records).flat().flatMap((r) => Object.values(r.files)));
    for (const file of all) {
      const bytes = company.blobs.read(file.blob);
      expect(bytes.length).toBe(file.size);
      if (file.file_name.endsWith('.pdf')) {
        expect(bytes.subarray(0, 8).toString('latin1')).toBe('%PDF-1.4');
        expect(bytes.subarray(-6).toString('latin1')).toBe('%%EOF\n');
      } else {
        expect(bytes.subarray(0, 20).toString('latin1')).toBe('no,item,date,amount\n');
      }
    }
  });

  it('keep no file bytes: blobs are generated, and still read after a state-dir restore', async () => {
    const company = await generated({ members: 20 });
    const entries = company.blobs.entriesForSave();
    expect(entries.length).toBeGreaterThan(20);
    expect(entries.every((e) => e.source.type === 'generated')).toBe(true);
    const restored = new BlobStore();
    for (const entry of JSON.parse(JSON.stringify(entries))) restored.restore(entry);
    for (const entry of entries) expect(restored.sha256(entry.id)).toBe(company.blobs.sha256(entry.id));
  });

  it('seed 200,000 members holding none of them, and list them without taking any (timing: bench/generate.ts)', async () => {
    const company = await generated({ members: 200_000 });
    expect(Object.keys(company.data.members)).toHaveLength(200_000);
    expect(peekEntry(company.data.members, 'G200000')?.id).toBe(200_000);
    expect(company.data.members.G200001).toBeUndefined();
    const small = await generated({ members: 300 });
    const codes = [...sortedCodes(small.data.sheets['2']!.records)];
    expect(codes.length).toBeGreaterThan(100);
    expect(stateView(small).attachments.length).toBeGreaterThan(300);
    for (const record of [small.data.members, small.data.photos, small.data.sheets['1']!.records, small.data.sheets['2']!.records]) expect(heldCount(record)).toBe(0);
    expect(heldCount(company.data.members)).toBe(0);
  });

  it('refuse options out of range, naming the option', () => {
    expect(() => seedGenerated({ members: 10, photo_bytes: [50_000, 40_000] })).toThrow(/photo_bytes/);
    expect(() => seedGenerated({ members: 10, photo_bytes: [100, 40_000] })).toThrow(/photo_bytes/);
    expect(() => seedGenerated({ members: 10, photo_ratio: 2 } as GenerateOptions)).toThrow(/photo_ratio/);
    expect(() => seedGenerated({ members: 10, colour: 'red' } as GenerateOptions)).toThrow(/colour/);
  });
});

describe('synthetic files', () => {
  it('have exactly the size asked for, across segment and digit boundaries', () => {
    for (const size of [MIN_PHOTO_BYTES, 65_537 + 3000, 65_537 * 2 + 3000, 999_999, 1_000_000, 5 * 1024 * 1024]) {
      expect(syntheticPhoto(1, 'G000001 seed 1', size).length).toBe(size);
    }
    for (const size of [MIN_ATTACHMENT_BYTES, 9_999, 10_000, 10_001, 10_002, 99_998, 100_003, 1_000_000]) {
      expect(syntheticPdf(['Employment contract', 'G999999 g999999@example.com', 'Entered 2000-01-01', 'Seed 4294967295'], size).length).toBe(size);
      expect(syntheticCsv('G999999 record 999 seed 4294967295', size).length).toBe(size);
    }
  });

  it('make a PDF of every size where its xref offset gains a digit, with startxref pointing at the xref', () => {
    const lines = ['Contract', 'G000001'];
    for (const around of [1_000, 10_000, 100_000]) {
      for (let size = around; size < around + 400; size += 1) {
        const text = syntheticPdf(lines, size).toString('latin1');
        expect(text.length).toBe(size);
        const at = Number(/startxref\n(\d+)\n%%EOF\n$/.exec(text)?.[1]);
        expect(text.slice(at, at + 5), `size ${size}`).toBe('xref\n');
      }
    }
  });

  it('fit the smallest sizes the options allow', () => {
    expect(minPhotoBytes()).toBeLessThanOrEqual(MIN_PHOTO_BYTES);
  });
});

describe('over HTTP: useEmulator({ generate: { members: 50 } })', () => {
  const emu = useEmulator({ generate: { members: 50 } });

  it('GET /_emulator/state lists the generated members and files', async () => {
    const state = await emu().control('GET', '/state');
    expect(state.members).toHaveLength(50);
    expect(state.members[0].code).toBe('G000001');
    expect(state.members.filter((m: any) => m.photo).length).toBeGreaterThan(35);
    expect(state.attachments.length).toBeGreaterThanOrEqual(50);
    expect(state.attachments[0].sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('serves a generated photo whose bytes match the state', async () => {
    const state = await emu().control('GET', '/state');
    const list = await emu().api('GET', '/members/face_image');
    expect(list.status).toBe(200);
    const first = list.body.member_data[0];
    const res = await fetch(first.download_url);
    const bytes = Buffer.from(await res.arrayBuffer());
    const truth = state.members.find((m: any) => m.code === first.code).photo;
    expect(bytes.length).toBe(truth.size);
    expect(sha(bytes)).toBe(truth.sha256);
  });
});
