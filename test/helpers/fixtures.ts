/**
 * Arranges company data directly in the in-process emulator, for tests of one operation that need
 * members, sheets or files to exist first without going through other operations.
 */
import sharp from 'sharp';
import type { Company } from '../../src/emulator/company.js';
import type { FieldDef, Member, SheetDef } from '../../src/emulator/model.js';
import type { TestEmulator } from './emulator.js';

export function companyOf(emu: TestEmulator, name?: string): Company {
  const company = emu.emulator.company(name);
  if (!company) throw new Error(`no company ${name ?? '(default)'}`);
  return company;
}

export function addMember(emu: TestEmulator, code: string, extra: Partial<Member> = {}): Member {
  const company = companyOf(emu);
  const member: Member = {
    id: company.data.next_ids.member++, code, name: `Member ${code}`, name_kana: '', mail: `${code.toLowerCase()}@example.test`, entered_date: '2020-04-01',
    retired_date: '', gender: '', birthday: '', department_code: null, sub_department_codes: [], custom_fields: {},
    updated_at: company.now(), ...extra,
  };
  company.data.members[code] = member;
  return member;
}

export function addSheet(emu: TestEmulator, def: SheetDef): void {
  const company = companyOf(emu);
  company.data.sheets[String(def.id)] = { def, updated_at: company.now(), records: {} };
}

export function field(id: number, name: string, kind: FieldDef['kind'], extra: Partial<FieldDef> = {}): FieldDef {
  return { id, name, kind, required: false, max_length: null, ...extra };
}

export function setPhoto(emu: TestEmulator, code: string, data: Buffer): void {
  const company = companyOf(emu);
  company.data.photos[code] = company.storeFile(data, `${code}.jpg`, company.data.photos[code]);
}

/** A real JPEG of the given size in pixels, one colour per seed. */
export async function jpeg(width = 64, height = 48, seed = 1): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: (seed * 53) % 256, g: (seed * 97) % 256, b: (seed * 151) % 256 } } })
    .jpeg()
    .toBuffer();
}

export async function png(width = 64, height = 48): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 4, background: { r: 10, g: 200, b: 30, alpha: 1 } } }).png().toBuffer();
}

export const b64 = (data: Buffer): string => data.toString('base64');
