import { beforeEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { addMember, companyOf } from '../helpers/fixtures.js';
import type { Department } from '../../src/emulator/model.js';

// Many task requests in one file: the 5-a-minute update limit has its own tests elsewhere.
const emu = useEmulator({ limits: { updatesPerMinute: 10_000 } });

const dept = (code: string, parent_code: string | null, extra: Partial<Department> = {}): Department => ({
  code, name: `Dept ${code}`, parent_code, leader_member_code: null, order: 1, memo: '', ...extra,
});

beforeEach(async () => {
  const company = companyOf(emu());
  await company.reset();
  company.data.departments = [dept('HQ', null), dept('SALES', 'HQ'), dept('DEV', 'HQ', { order: 2, memo: 'builders' })];
});

const data = () => companyOf(emu()).data;

async function putTree(department_data: unknown[], headers: Record<string, string> = {}) {
  const res = await emu().api('PUT', '/departments', { department_data }, headers);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return emu().waitTask(res.body.task_id);
}

describe('GET /departments (wire-format.md, Departments)', () => {
  it('answers department_data with code, name, parent_code, leader_member_code, order and memo (as stored)', async () => {
    const res = await emu().api('GET', '/departments');
    expect(res.status).toBe(200);
    expect(res.body.department_data).toEqual([
      { code: 'HQ', name: 'Dept HQ', parent_code: null, leader_member_code: null, order: 1, memo: '' },
      { code: 'SALES', name: 'Dept SALES', parent_code: 'HQ', leader_member_code: null, order: 1, memo: '' },
      { code: 'DEV', name: 'Dept DEV', parent_code: 'HQ', leader_member_code: null, order: 2, memo: 'builders' },
    ]);
  });
});

describe('PUT /departments: bulk update (api-v2.md 4.4 Department tree)', () => {
  it('replaces the tree: departments absent from the body are deleted, order defaults to the position among siblings', async () => {
    addMember(emu(), 'L1');
    const task = await putTree([
      { code: 'HQ', name: 'Head office' },
      { code: 'OPS', name: 'Operations', parent_code: 'HQ', leader_member_code: 'L1', memo: 'new' },
      { code: 'OPS2', name: 'Operations 2', parent_code: 'HQ', order: 7 },
      { code: 'T1', name: 'Team 1', parent_code: 'OPS' },
    ]);
    expect(task).toMatchObject({ status: 'OK', messages: [] });
    const res = await emu().api('GET', '/departments');
    expect(res.body.department_data).toEqual([
      { code: 'HQ', name: 'Head office', parent_code: null, leader_member_code: null, order: 1, memo: null },
      { code: 'OPS', name: 'Operations', parent_code: 'HQ', leader_member_code: 'L1', order: 1, memo: 'new' },
      { code: 'OPS2', name: 'Operations 2', parent_code: 'HQ', leader_member_code: null, order: 7, memo: null },
      { code: 'T1', name: 'Team 1', parent_code: 'OPS', leader_member_code: null, order: 1, memo: null },
    ]);
  });

  it('changes the department names members show, root first', async () => {
    addMember(emu(), 'M1', { department_code: 'SALES' });
    await putTree([{ code: 'HQ', name: 'Group' }, { code: 'SALES', name: 'Field sales', parent_code: 'HQ' }, { code: 'DEV', name: 'Dev', parent_code: 'HQ' }]);
    const res = await emu().api('GET', '/members');
    expect(res.body.member_data[0].department).toEqual({ code: 'SALES', name: 'Group Field sales', names: ['Group', 'Field sales'] });
  });

  it('ends NG for empty and repeated codes and empty names, changing nothing', async () => {
    const task = await putTree([{ code: '', name: 'x' }, { code: 'A', name: 'x' }, { code: 'A', name: 'y' }, { code: 'B', name: '' }]);
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual([
      'department_data[0]: code is required and must not be empty',
      'department A: appears more than once in department_data',
      'department B: name is required and must not be empty',
    ]);
    expect(data().departments.map((d) => d.code)).toEqual(['HQ', 'SALES', 'DEV']);
  });

  it('needs every parent_code to be a department of the same request', async () => {
    const task = await putTree([{ code: 'HQ', name: 'x' }, { code: 'A', name: 'x', parent_code: 'NOWHERE' }, { code: 'B', name: 'x', parent_code: 'B' }]);
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual([
      'department A: parent_code "NOWHERE" is not a department of department_data',
      'department B: parent_code names the department itself',
    ]);
  });

  it('refuses cycles of parent links, one message per cycle', async () => {
    const task = await putTree([
      { code: 'HQ', name: 'x' },
      { code: 'A', name: 'x', parent_code: 'C' },
      { code: 'B', name: 'x', parent_code: 'A' },
      { code: 'C', name: 'x', parent_code: 'B' },
      { code: 'D', name: 'x', parent_code: 'A' },
    ]);
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual(['department A: parent_code links form a cycle (A → C → B → A)']);
  });

  it('needs a leader_member_code to name a member', async () => {
    addMember(emu(), 'BOSS');
    const task = await putTree([{ code: 'HQ', name: 'x', leader_member_code: 'BOSS' }, { code: 'A', name: 'x', leader_member_code: 'GHOST' }]);
    expect(task).toMatchObject({ status: 'NG', messages: ['department A: leader_member_code "GHOST" is not a member'] });
  });

  it('refuses to delete a department that members still belong to, primary or concurrent, naming it and them', async () => {
    addMember(emu(), 'P1', { department_code: 'SALES' });
    addMember(emu(), 'P2', { sub_department_codes: ['DEV'] });
    const task = await putTree([{ code: 'HQ', name: 'Only' }]);
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual([
      'department SALES: cannot be deleted while members belong to it (primary or concurrent): P1',
      'department DEV: cannot be deleted while members belong to it (primary or concurrent): P2',
    ]);
    expect(data().departments).toHaveLength(3);
  });

  it('drops departments that are gone from the extended access settings of kind department', async () => {
    data().advanced_permissions.department = [{ user_id: 1, add_codes: ['SALES', 'DEV'], exclusion_codes: ['DEV'] }];
    const task = await putTree([{ code: 'HQ', name: 'x' }, { code: 'SALES', name: 'x', parent_code: 'HQ' }]);
    expect(task.status).toBe('OK');
    expect(data().advanced_permissions.department).toEqual([{ user_id: 1, add_codes: ['SALES'], exclusion_codes: [] }]);
  });

  it('accepts an empty department_data when nobody belongs anywhere: the tree is emptied', async () => {
    const task = await putTree([]);
    expect(task.status).toBe('OK');
    expect(data().departments).toEqual([]);
  });

  it('in dry run ends OK and changes nothing', async () => {
    const task = await putTree([{ code: 'NEW', name: 'x' }], { 'Dry-Run': '1' });
    expect(task.status).toBe('OK');
    expect(data().departments.map((d) => d.code)).toEqual(['HQ', 'SALES', 'DEV']);
  });

  it('answers a body without department_data, or with a department without a name, with 400', async () => {
    expect((await emu().api('PUT', '/departments', {})).status).toBe(400);
    expect((await emu().api('PUT', '/departments', { department_data: [{ code: 'A' }] })).status).toBe(400);
  });
});
