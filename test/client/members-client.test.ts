/**
 * The SDK's members and departments against the in-process emulator (issue 3: every method with a
 * real round trip). Each write is followed by `tasks.wait` and a check of its effect through a read.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { addMember, companyOf, field } from '../helpers/fixtures.js';
import type { TaskRef, WdsClient } from '../../src/index.js';

// Many task requests in one file: the 5-a-minute update limit has its own tests (limits.test.ts).
const emu = useEmulator({ limits: { updatesPerMinute: 10_000, requestsPerHour: 1_000_000 }, taskTiming: { waitMs: 5, runMs: 5, perItemMs: 0 } });
let client: WdsClient;

beforeAll(() => {
  client = clientFor(emu(), { limits: { update: { limit: 10_000, windowMs: 60_000 }, request: { limit: 1_000_000, windowMs: 3_600_000 } } });
});
afterAll(async () => {
  await client.close();
});

beforeEach(async () => {
  const company = companyOf(emu());
  await company.reset();
  company.data.member_fields = [field(11, 'Blood type', 'pulldown', { options: [{ id: 1, name: 'A' }, { id: 2, name: 'B' }] }), field(12, 'Nickname', 'text_box', { max_length: 10 })];
  company.data.departments = [
    { code: 'HQ', name: 'Head office', parent_code: null, leader_member_code: null, order: 1, memo: '' },
    { code: 'DEV', name: 'Development', parent_code: 'HQ', leader_member_code: null, order: 1, memo: '' },
  ];
});

/** Waits for a task with a short first poll; NG or ERROR throws with the task's messages. */
const done = async (ref: Promise<TaskRef>) => client.tasks.wait((await ref).taskId, { intervalMs: 5, throwOnFailure: true });
const listed = async (code: string) => (await client.members.list()).member_data.find((m) => m.code === code);
const codes = async () => (await client.members.list()).member_data.map((m) => m.code);

describe('client.members', () => {
  it('list answers every member with the service additions (department names, age, custom field names)', async () => {
    addMember(emu(), 'M001', { birthday: '1990-06-15', department_code: 'DEV', custom_fields: { 11: ['B'] } });
    const answer = await client.members.list();
    expect(typeof answer.updated_at).toBe('string');
    expect(answer.member_data).toHaveLength(1);
    const member = answer.member_data[0]!;
    expect(member).toMatchObject({
      code: 'M001',
      name: 'Member M001',
      department: { code: 'DEV', name: 'Head office Development', names: ['Head office', 'Development'] },
      custom_fields: [{ id: 11, name: 'Blood type', values: ['B'] }, { id: 12, name: 'Nickname', values: [''] }],
    });
    // The clock stands at 2026-04-01: the service adds age and years of service (wire-format.md, Members).
    expect(member.age).toBe(35);
    expect(member.years_of_service).toBe('6年0ヵ月');
  });

  it('layout answers the base fields, which its schema does not name, and the custom fields', async () => {
    const layout = await client.members.layout();
    // The schema names only custom_fields: the base keys come through because objects are loose.
    expect(layout.code).toMatchObject({ required: true, type: 'string' });
    expect(layout.name).toMatchObject({ required: true });
    expect(layout.custom_fields).toEqual([
      expect.objectContaining({ id: 11, type_detail: 'pull_down', enum: ['A', 'B'] }),
      expect.objectContaining({ id: 12, max_length: 10 }),
    ]);
  });

  it('layout sends get_calc_type: formula parts only when asked', async () => {
    companyOf(emu()).data.member_fields.push(field(13, 'Total', 'calc_formula', { formula: '1 + 1' }));
    const ids = (layout: Record<string, unknown>) => (layout.custom_fields as { id: number }[]).map((f) => f.id);
    expect(ids(await client.members.layout())).toEqual([11, 12]);
    expect(ids(await client.members.layout({ getCalcType: true }))).toEqual([11, 12, 13]);
  });

  it('register adds members', async () => {
    const task = await done(client.members.register([
      { code: 'N001', name: 'New One', department: { code: 'DEV' }, custom_fields: [{ id: 12, values: ['Nick'] }] },
      { code: 'N002', name: 'New Two' },
    ]));
    expect(task).toEqual({ id: expect.any(Number), status: 'OK', messages: [] });
    expect(await codes()).toEqual(['N001', 'N002']);
    expect(await listed('N001')).toMatchObject({ name: 'New One', department: { code: 'DEV' } });
    expect((await listed('N001'))!.custom_fields!.find((f) => f.id === 12)!.values).toEqual(['Nick']);
  });

  it('bulkUpdate replaces each named member as a whole', async () => {
    addMember(emu(), 'M001', { name_kana: 'kana', custom_fields: { 12: ['Old'] } });
    await done(client.members.bulkUpdate([{ code: 'M001', name: 'Renamed' }]));
    const member = await listed('M001');
    expect(member).toMatchObject({ name: 'Renamed', name_kana: '', mail: '' });
    expect(member!.custom_fields!.find((f) => f.id === 12)!.values).toEqual(['']);
  });

  it('partialUpdate changes only the values sent; an empty string clears', async () => {
    addMember(emu(), 'M001', { name_kana: 'kana', custom_fields: { 12: ['Old'] } });
    await done(client.members.partialUpdate([{ code: 'M001', mail: 'new@example.test', custom_fields: [{ id: 12, values: [''] }] }]));
    const member = await listed('M001');
    expect(member).toMatchObject({ name: 'Member M001', name_kana: 'kana', mail: 'new@example.test' });
    expect(member!.custom_fields!.find((f) => f.id === 12)!.values).toEqual(['']);
  });

  it('replaceAll registers unknown codes, updates known ones and deletes known codes left out', async () => {
    addMember(emu(), 'M001');
    addMember(emu(), 'M002');
    await done(client.members.replaceAll([{ code: 'M001', name: 'Kept' }, { code: 'M003', name: 'Added' }]));
    expect(await codes()).toEqual(['M001', 'M003']);
    expect(await listed('M001')).toMatchObject({ name: 'Kept' });
  });

  it('delete removes members', async () => {
    addMember(emu(), 'M001');
    addMember(emu(), 'M002');
    await done(client.members.delete(['M001']));
    expect(await codes()).toEqual(['M002']);
  });

  it('a write breaking a rule ends NG with a message naming the member, and changes nothing', async () => {
    addMember(emu(), 'M001');
    const { taskId } = await client.members.register([{ code: 'M001', name: 'Again' }, { code: 'M002', name: 'Fine' }]);
    const task = await client.tasks.wait(taskId, { intervalMs: 5 });
    expect(task.status).toBe('NG');
    expect(task.messages.join('\n')).toContain('member M001');
    expect(await codes()).toEqual(['M001']);
  });
});

describe('client.departments', () => {
  it('list answers the tree', async () => {
    expect(await client.departments.list()).toEqual([
      { code: 'HQ', name: 'Head office', parent_code: null, leader_member_code: null, order: 1, memo: '' },
      { code: 'DEV', name: 'Development', parent_code: 'HQ', leader_member_code: null, order: 1, memo: '' },
    ]);
  });

  it('bulkUpdate replaces the whole tree: departments left out are deleted', async () => {
    addMember(emu(), 'L001');
    await done(client.departments.bulkUpdate([
      { code: 'HQ', name: 'Head office', parent_code: null, leader_member_code: 'L001', order: 1, memo: 'top' },
      { code: 'OPS', name: 'Operations', parent_code: 'HQ' },
    ]));
    const tree = await client.departments.list();
    expect(tree.map((d) => d.code)).toEqual(['HQ', 'OPS']);
    expect(tree[0]).toMatchObject({ leader_member_code: 'L001', memo: 'top' });
    expect(tree[1]).toMatchObject({ parent_code: 'HQ', order: 1 });
  });
});
