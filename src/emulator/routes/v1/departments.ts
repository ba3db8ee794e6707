/**
 * Departments through the legacy interface (api-v1-legacy.md 2 "Department record", operations
 * 5-7). A record is one department written as its path from the root: `department_code1` and
 * `department_name1` for the top level, `department_code2`... down to the department itself, then
 * its `leader_member_code`, `leader_member_name` and `memo`.
 *
 * Choices where both documents are silent:
 * - The read lists every department, parents before children, each as its own record.
 * - In a request, a path's upper levels create or confirm the departments above; the last level is
 *   the department the record describes (leader and memo are its own). Trailing empty levels
 *   (`"department_code3": ""`) are ignored, as a spreadsheet export writes them.
 * - A code must keep one name and one parent throughout a request, and add cannot move or rename
 *   an existing department, nor describe one that exists already (NG naming it).
 * - Overwrite deletes departments absent from the request, but never one a member still belongs
 *   to (primary or concurrent): the task ends NG naming it, as the v2 bulk update does.
 * - `leader_member_name` is read-only (the leader's name) and ignored when sent.
 */
import { peekEntries } from '../../lazy-record.js';
import { z } from 'zod';
import type { Company } from '../../company.js';
import type { CompanyData, Department } from '../../model.js';
import { noParameters, parseLegacyBody, refuse, updateAnswer, type LegacyHandler, type LegacyPlan } from './context.js';

const LEVEL_KEY = /^department_(code|name)([1-9]\d{0,1})$/;

function pathOf(departments: Department[], department: Department): Department[] {
  const byCode = new Map(departments.map((d) => [d.code, d]));
  const path: Department[] = [];
  const seen = new Set<string>();
  let current: Department | undefined = department;
  while (current && !seen.has(current.code)) {
    seen.add(current.code);
    path.unshift(current);
    current = current.parent_code ? byCode.get(current.parent_code) : undefined;
  }
  return path;
}

function headersFor(levels: number): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let level = 1; level <= Math.max(1, levels); level += 1) {
    headers[`department_code${level}`] = `Department code (level ${level})`;
    headers[`department_name${level}`] = `Department name (level ${level})`;
  }
  return { ...headers, leader_member_code: 'Leader employee number', leader_member_name: 'Leader name', memo: 'Memo' };
}

/** Parents before children, siblings in their order. */
function treeOrder(departments: Department[]): Department[] {
  const children = new Map<string | null, Department[]>();
  const codes = new Set(departments.map((d) => d.code));
  for (const d of departments) {
    const parent = d.parent_code && codes.has(d.parent_code) ? d.parent_code : null;
    children.set(parent, [...(children.get(parent) ?? []), d]);
  }
  const out: Department[] = [];
  const visit = (parent: string | null): void => {
    const list = [...(children.get(parent) ?? [])].sort((a, b) => (a.order ?? 0) - (b.order ?? 0));
    for (const d of list) {
      if (out.includes(d)) continue;
      out.push(d);
      visit(d.code);
    }
  };
  visit(null);
  return out;
}

export function departmentRecords(data: CompanyData): { levels: number; records: Record<string, unknown>[] } {
  let levels = 1;
  const records = treeOrder(data.departments).map((d) => {
    const path = pathOf(data.departments, d);
    levels = Math.max(levels, path.length);
    const record: Record<string, unknown> = {};
    path.forEach((p, i) => {
      record[`department_code${i + 1}`] = p.code;
      record[`department_name${i + 1}`] = p.name;
    });
    const leader = d.leader_member_code ? data.members[d.leader_member_code] : undefined;
    record.leader_member_code = d.leader_member_code ?? '';
    record.leader_member_name = leader?.name ?? '';
    record.memo = d.memo;
    return record;
  });
  return { levels, records };
}

export const listDepartments: LegacyHandler = (ctx) => {
  noParameters(ctx);
  const { levels, records } = departmentRecords(ctx.company.data);
  if (ctx.dryRun) return { body: { status: 'OK', headers: headersFor(levels) } };
  return { body: { status: 'OK', departments: records } };
};

interface PathRecord {
  index: number;
  path: { code: string; name: string }[];
  leader: string | null | undefined;
  memo: string | null | undefined;
}

const cell = z.union([z.string(), z.null()], { error: 'must be a string' }).optional();
const departmentsBodySchema = z.strictObject({
  departments: z.array(z.record(z.string(), z.unknown()), { error: 'must be an array of departments' }).min(1, 'must hold at least one department'),
});

/** Reads one record's keys; a key that is neither a level nor leader/memo is a 400 naming it. */
function readRecord(raw: Record<string, unknown>, index: number): PathRecord {
  const where = `departments[${index}]`;
  const codes: string[] = [];
  const names: string[] = [];
  const problems: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    const parsed = cell.safeParse(value);
    if (!parsed.success) {
      problems.push(`${where}.${key}: must be a string`);
      continue;
    }
    const m = LEVEL_KEY.exec(key);
    if (m) (m[1] === 'code' ? codes : names)[Number(m[2]) - 1] = parsed.data ?? '';
    else if (!['leader_member_code', 'leader_member_name', 'memo'].includes(key)) problems.push(`unknown field "${key}" in ${where}`);
  }
  if (problems.length) throw refuse(400, problems);
  let depth = Math.max(codes.length, names.length);
  while (depth > 0 && !codes[depth - 1] && !names[depth - 1]) depth -= 1;
  const path: { code: string; name: string }[] = [];
  for (let level = 1; level <= depth; level += 1) {
    const code = codes[level - 1] ?? '';
    const name = names[level - 1] ?? '';
    if (!code || !name) problems.push(`${where}: department_code${level} and department_name${level} are both required (level ${level} of ${depth})`);
    path.push({ code, name });
  }
  if (depth === 0) problems.push(`${where}: department_code1 and department_name1 are required`);
  if (problems.length) throw refuse(400, problems);
  return { index, path, leader: raw.leader_member_code as string | null | undefined, memo: raw.memo as string | null | undefined };
}

function planDepartments(company: Company, records: PathRecord[], mode: 'overwrite' | 'add'): LegacyPlan {
  const { data } = company;
  const errors: string[] = [];
  const existing = new Map(data.departments.map((d) => [d.code, d]));
  const nodes = new Map<string, Department>();
  const described = new Set<string>();
  // The last order among siblings: a new department goes after them (add keeps the others' order).
  const siblings = new Map<string | null, number>();
  if (mode === 'add') for (const d of data.departments) siblings.set(d.parent_code, Math.max(siblings.get(d.parent_code) ?? 0, d.order ?? 0));
  for (const record of records) {
    let parent: string | null = null;
    record.path.forEach(({ code, name }, level) => {
      const last = level === record.path.length - 1;
      const known = nodes.get(code);
      if (known) {
        if (known.name !== name) errors.push(`department ${code}: named both "${known.name}" and "${name}" in departments`);
        if (known.parent_code !== parent) errors.push(`department ${code}: placed under ${known.parent_code ?? 'the top'} and under ${parent ?? 'the top'} in departments`);
      } else {
        const before = existing.get(code);
        if (mode === 'add' && before && (before.name !== name || before.parent_code !== parent)) {
          errors.push(`department ${code}: exists as "${before.name}" under ${before.parent_code ?? 'the top'}; add cannot rename or move it (use overwrite)`);
        }
        let order = before?.order ?? null;
        if (mode === 'overwrite' || !before) {
          order = (siblings.get(parent) ?? 0) + 1;
          siblings.set(parent, order);
        }
        nodes.set(code, {
          code, name, parent_code: parent,
          leader_member_code: before?.leader_member_code ?? null,
          order,
          memo: before?.memo ?? null,
        });
      }
      if (last) {
        if (described.has(code)) errors.push(`department ${code}: appears more than once in departments`);
        described.add(code);
        if (mode === 'add' && existing.has(code)) errors.push(`department ${code}: already exists; add only adds departments (use overwrite to change it)`);
        const node = nodes.get(code)!;
        if (record.leader !== undefined) {
          const leader = record.leader || null;
          if (leader !== null && !data.members[leader]) errors.push(`department ${code}: leader_member_code "${leader}" is not a member`);
          node.leader_member_code = leader;
        }
        if (record.memo !== undefined) node.memo = record.memo;
      }
      parent = code;
    });
  }
  let tree: Department[];
  if (mode === 'overwrite') {
    tree = [...nodes.values()];
    const holders = new Map<string, string[]>();
    for (const [, member] of peekEntries(data.members)) {
      for (const code of [member.department_code, ...member.sub_department_codes]) {
        if (code === null || nodes.has(code)) continue;
        holders.set(code, [...new Set([...(holders.get(code) ?? []), member.code])]);
      }
    }
    for (const [code, members] of holders) {
      const shown = members.slice(0, 5).join(', ') + (members.length > 5 ? ` and ${members.length - 5} more` : '');
      errors.push(`department ${code}: cannot be deleted while members belong to it (primary or concurrent): ${shown}`);
    }
  } else {
    tree = [...data.departments.map((d) => nodes.get(d.code) ?? d), ...[...nodes.values()].filter((n) => !existing.has(n.code))];
  }
  return {
    errors,
    apply: () => {
      data.departments = tree;
      const codes = new Set(tree.map((d) => d.code));
      data.advanced_permissions.department = data.advanced_permissions.department.map((p) => ({
        ...p,
        add_codes: p.add_codes.filter((c) => codes.has(c)),
        exclusion_codes: p.exclusion_codes.filter((c) => codes.has(c)),
      }));
    },
  };
}

function departmentWriter(mode: 'overwrite' | 'add'): LegacyHandler {
  return (ctx) => {
    const body = parseLegacyBody(departmentsBodySchema, ctx.body);
    const records = body.departments.map((raw, i) => readRecord(raw, i));
    return updateAnswer(ctx, records.length, () => planDepartments(ctx.company, records, mode));
  };
}

export const overwriteDepartments = departmentWriter('overwrite');
export const addDepartments = departmentWriter('add');
