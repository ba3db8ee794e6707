/**
 * The emulator through the eyes of a strict third-party client, written as the public clients of
 * the real service are (wire-format.md, "Real-client facts"): it reads `values[0]` of every field
 * without checking, refuses a `type_detail` it does not know, and once dry-run is switched on it
 * sends `Dry-Run: 1` on every request, reads included.
 */
import { describe, expect, it } from 'vitest';
import { useEmulator, KEY, SECRET } from '../helpers/emulator.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10_000 } });

const KNOWN_TYPE_DETAILS = new Set([
  'text_box', 'text_area', 'number_box', 'pull_down', 'radio_button', 'check_box', 'link', 'date', 'year_month',
  'attach_file', 'face_image', 'calc_formula',
]);

interface Field { id: number; name: string; values: string[] }

class StrictClient {
  private token = '';
  dryRun = false;
  readonly sent: string[] = [];

  constructor(private readonly baseUrl: string) {}

  async login(): Promise<void> {
    const res = await fetch(`${this.baseUrl}/api/v2.0/token`, {
      method: 'POST',
      headers: { Authorization: `Basic ${Buffer.from(`${KEY}:${SECRET}`).toString('base64')}`, 'Content-Type': 'application/x-www-form-urlencoded;charset=UTF-8' },
      body: 'grant_type=client_credentials',
    });
    const body = (await res.json()) as { access_token: string; expire_in: number };
    if (res.status !== 200 || typeof body.expire_in !== 'number') throw new Error(`token: ${res.status}`);
    this.token = body.access_token;
  }

  /** Any status but 200 is an exception, as in the real clients. */
  async request(method: string, path: string, body?: unknown): Promise<any> {
    const headers: Record<string, string> = { 'Service-Token': this.token, 'Content-Type': 'application/json' };
    if (this.dryRun) headers['Dry-Run'] = '1';
    this.sent.push(`${method} ${path}${this.dryRun ? ' (Dry-Run: 1)' : ''}`);
    const res = await fetch(`${this.baseUrl}/api/v2.0${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${method} ${path}: HTTP ${res.status} ${text}`);
    return JSON.parse(text);
  }

  async waitTask(id: number): Promise<{ status: string; messages: string[] }> {
    for (;;) {
      const task = await this.request('GET', `/tasks/${id}`);
      if (task.status !== 'WAITING' && task.status !== 'RUNNING') return task;
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** The first value of a field, read the way a real client does: no check that there is one. */
  static first(field: Field): string {
    const value = field.values[0];
    if (value === undefined) throw new Error(`IndexError: list index out of range (custom field ${field.id} "${field.name}")`);
    if (typeof value !== 'string') throw new TypeError(`custom field ${field.id}: values[0] is not a string`);
    return value;
  }

  /** Layout fields of an unknown kind are refused, as one real client does. */
  static checkLayout(fields: { id: number; type_detail: string }[]): void {
    for (const f of fields) if (!KNOWN_TYPE_DETAILS.has(f.type_detail)) throw new Error(`unknown type_detail "${f.type_detail}" on field ${f.id}`);
  }
}

async function readEverything(client: StrictClient): Promise<{ memberValues: number; recordValues: number; layouts: number }> {
  const memberLayout = await client.request('GET', '/member_layouts?get_calc_type=true');
  StrictClient.checkLayout(memberLayout.custom_fields);
  const layouts = (await client.request('GET', '/sheet_layouts?get_calc_type=true')).sheets as { id: number; custom_fields: { id: number; type_detail: string }[] }[];
  for (const layout of layouts) {
    StrictClient.checkLayout(layout.custom_fields);
    StrictClient.checkLayout((await client.request('GET', `/sheet_layouts/${layout.id}?get_calc_type=true`)).custom_fields);
  }
  let memberValues = 0;
  const members = (await client.request('GET', '/members')).member_data as { code: string; custom_fields: Field[]; years_of_service: string }[];
  for (const m of members) {
    for (const f of m.custom_fields) {
      StrictClient.first(f);
      memberValues += 1;
    }
  }
  let recordValues = 0;
  for (const layout of layouts) {
    const sheet = await client.request('GET', `/sheets/${layout.id}?get_calc_type=true`);
    for (const m of sheet.member_data as { records: { custom_fields: Field[] }[] }[]) {
      for (const r of m.records) {
        for (const f of r.custom_fields) {
          StrictClient.first(f);
          recordValues += 1;
        }
      }
    }
    for (const part of layout.custom_fields.filter((f) => f.type_detail === 'attach_file')) {
      await client.request('GET', `/sheets/${layout.id}/custom_fields/${part.id}/file`);
    }
  }
  await client.request('GET', '/members/face_image');
  await client.request('GET', '/departments');
  const users = (await client.request('GET', '/users')).user_data as { id: number }[];
  await client.request('GET', `/users/${users[0]!.id}`);
  await client.request('GET', '/roles');
  await client.request('GET', '/advanced_permissions/member');
  await client.request('GET', '/advanced_permissions/department');
  const masters = (await client.request('GET', '/enum_options')).custom_field_data as { id: string | number }[];
  await client.request('GET', `/enum_options/${masters[0]!.id}`);
  await client.request('GET', '/webhook');
  return { memberValues, recordValues, layouts: layouts.length };
}

describe('a strict third-party client', () => {
  it('registers two members with empty custom fields, then reads values[0] of every field of every member and sheet record', async () => {
    const client = new StrictClient(emu().url);
    await client.login();
    const { task_id } = await client.request('POST', '/members', {
      member_data: [
        { code: 'S9001', name: 'Strict One', department: { code: '1100' }, custom_fields: [{ id: 1101, values: [''] }, { id: 1103, values: [''] }] },
        { code: 'S9002', name: 'Strict Two', department: { code: '1210' } },
      ],
    });
    expect(await client.waitTask(task_id)).toMatchObject({ status: 'OK' });
    const read = await readEverything(client);
    // 32 members with 3 member fields each; both new members also show in the single-record sheet.
    expect(read.memberValues).toBe(32 * 3);
    expect(read.recordValues).toBeGreaterThan(32 * 3);
    const members = (await client.request('GET', '/members')).member_data as { code: string; custom_fields: Field[] }[];
    expect(members.find((m) => m.code === 'S9002')!.custom_fields.map(StrictClient.first)).toEqual(['', '', '']);
  });

  it('switches dry-run on for every request and still makes every read; a write it sends changes nothing', async () => {
    const client = new StrictClient(emu().url);
    await client.login();
    const before = (await client.request('GET', '/members')).member_data.length as number;
    client.dryRun = true;
    client.sent.length = 0;
    const read = await readEverything(client);
    expect(read.layouts).toBe(2);
    const { task_id } = await client.request('POST', '/members', { member_data: [{ code: 'S9100', name: 'Only Checked' }] });
    expect(await client.waitTask(task_id)).toMatchObject({ status: 'OK' });
    expect((await client.request('GET', '/members')).member_data).toHaveLength(before);
    expect(client.sent.every((line) => line.endsWith('(Dry-Run: 1)'))).toBe(true);
    expect(client.sent.filter((line) => line.startsWith('GET ')).length).toBeGreaterThan(15);
  });
});
