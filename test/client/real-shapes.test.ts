/**
 * The client's schemas take every real shape of the service (test/fixtures/real-shapes, written
 * from wire-format.md "Real-client facts"), and keep the values a caller reads.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  attachmentListSchema, departmentsSchema, enumOptionsAnswerSchema, faceImageListSchema, memberLayoutSchema, membersAnswerSchema,
  rolesAnswerSchema, sheetAnswerSchema, sheetLayoutsAnswerSchema, usersAnswerSchema,
} from '../../src/spec/schemas.js';
import { TokenManager } from '../../src/client/auth.js';
import { deadlineOf } from '../../src/stages/export/list-urls.js';

const fixture = (name: string): unknown => JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'real-shapes', name), 'utf8'));

function parse<T extends z.ZodType>(schema: T, name: string): z.infer<T> {
  const result = schema.safeParse(fixture(name));
  if (!result.success) throw new Error(`${name}: ${result.error.message}`);
  return result.data;
}

describe('real shapes parse with the client schemas', () => {
  it('layouts: pull_down, radio_button, check_box, formula fields read_only with enum null (member layout) or [] (sheet layouts)', () => {
    const member = parse(memberLayoutSchema, 'member-layout.json');
    expect(member.custom_fields!.map((f) => f.type_detail)).toEqual(['pull_down', 'radio_button', 'check_box', 'text_area', 'link', 'calc_formula']);
    expect(member.custom_fields![5]).toMatchObject({ type: 'calc', read_only: true, enum: null });
    const sheets = parse(sheetLayoutsAnswerSchema, 'sheet-layouts.json').sheets;
    // The file parts, found the way the pipelines find them.
    const fileParts = sheets.flatMap((s) => s.custom_fields.filter((f) => f.type_detail === 'attach_file').map((f) => `${s.id}:${f.id}`));
    expect(fileParts).toEqual(['11:1104', '12:1203']);
    expect(sheets[0]!.custom_fields.find((f) => f.type === 'calc')).toMatchObject({ read_only: true, enum: [] });
  });

  it('members: department paths, years_of_service as a string, [""] for empty values, retired_date ""', () => {
    const [taro, hanako] = parse(membersAnswerSchema, 'members.json').member_data;
    expect(taro).toMatchObject({ age: 40, years_of_service: '15年5ヵ月', retired_date: '' });
    expect(taro!.department).toEqual({ code: 'D003', name: '営業本部 第一営業部 ITグループ', names: ['営業本部', '第一営業部', 'ITグループ'] });
    expect(taro!.sub_departments![0]!.name).toBe('管理本部 人事部');
    expect(hanako!.custom_fields!.map((f) => f.values)).toEqual([[''], [''], ['']]);
  });

  it('members: the integer id, and face_image with the photo time or null', () => {
    const [taro, hanako] = parse(membersAnswerSchema, 'members.json').member_data;
    expect([taro!.id, hanako!.id]).toEqual([58213, 58377]);
    expect(taro!.face_image).toEqual({ updated_at: '2025-10-02 09:14:37' });
    expect(hanako!.face_image).toBeNull();
  });

  it('a single-record sheet lists the empty record of a member with [""] in every field', () => {
    const sheet = parse(sheetAnswerSchema, 'sheet-single.json');
    const empty = sheet.member_data.find((m) => m.code === '1002')!;
    expect(empty.records).toHaveLength(1);
    expect(empty.records![0]!.custom_fields.every((f) => f.values.length === 1 && f.values[0] === '')).toBe(true);
  });

  it('roles and users: type "Adm" and "一般"', () => {
    expect(parse(rolesAnswerSchema, 'roles.json').role_data.map((r) => r.type)).toEqual(['Adm', '一般']);
    expect(parse(usersAnswerSchema, 'users.json').user_data.map((u) => u.role.type)).toEqual(['Adm', '一般']);
  });

  it('masters: the field id as a number or a string; departments: memo "" or null', () => {
    expect(parse(enumOptionsAnswerSchema, 'enum-options.json').custom_field_data.map((m) => m.id)).toEqual([301, '1202']);
    expect(parse(departmentsSchema, 'departments.json').department_data.map((d) => d.memo)).toEqual(['', null]);
  });

  it('download URLs signed by a CDN: the deadline comes from Expires, the rest of the query is opaque', () => {
    const photo = parse(faceImageListSchema, 'face-images.json').member_data[0]!;
    const file = parse(attachmentListSchema, 'attachments.json').member_data[0]!.records[0]!;
    const listedAt = 1_774_945_511_000; // 900 s before Expires, on the service's clock too
    for (const url of [photo.download_url, file.download_url]) {
      // 15 minutes ahead, less the 45 s margin (5 % of the lifetime).
      expect(deadlineOf(url, listedAt, listedAt)).toBe(listedAt + 900_000 - 45_000);
    }
  });
});

describe('token lifetime: expire_in or expires_in', () => {
  /** Issues with `answer` and asks twice; how many tokens were issued tells the lifetime it read. */
  async function issuedTwice(name: string, renewBeforeMs: number): Promise<number> {
    const answer = fixture(name);
    const manager = new TokenManager('key', 'secret', async () => answer, renewBeforeMs);
    await manager.get();
    await manager.get();
    return manager.issued;
  }

  it('reads expire_in (a number) as the lifetime', async () => {
    expect(await issuedTwice('token.json', 3_500_000)).toBe(1);
    expect(await issuedTwice('token.json', 3_700_000)).toBe(2);
  });

  it('reads expires_in, also as a string, when expire_in is absent', async () => {
    // 1,800 s: a token renewed 1,700 s early lasts; renewed 1,900 s early it is renewed at once.
    expect(await issuedTwice('token-expires-in.json', 1_700_000)).toBe(1);
    expect(await issuedTwice('token-expires-in.json', 1_900_000)).toBe(2);
  });
});
