/**
 * The department tree (api-v2.md 4.2, 4.4 "Department tree"; wire-format.md, Departments): the
 * listing and the bulk update, which replaces the whole tree ("bulk update deletes information
 * absent from the body").
 *
 * Choices where the specification is silent:
 * - The new tree must be a tree: unique non-empty codes and names, every `parent_code` a code of
 *   the same request, no cycles; a `leader_member_code` must name an existing member.
 * - A department that a member still belongs to (primary or concurrent) cannot disappear: the task
 *   ends NG naming it and its members, because deleting it would silently change their data.
 * - An absent `order` is the department's position among its siblings in the request (1 first).
 * - An empty `department_data` is accepted: it empties the tree, when no member belongs anywhere.
 */
import { peekEntries } from '../../lazy-record.js';
import { createTask, parseBody, type RouteHandler, type TaskPlan } from '../context.js';
import type { Company } from '../../company.js';
import type { Department } from '../../model.js';
import { departmentsSchema } from '../../../spec/schemas.js';
import type { z } from 'zod';

type DepartmentInput = z.infer<typeof departmentsSchema>['department_data'][number];

export const listDepartments: RouteHandler = (ctx) => ({
  body: {
    department_data: ctx.company.data.departments.map((d) => ({
      code: d.code,
      name: d.name,
      parent_code: d.parent_code,
      leader_member_code: d.leader_member_code,
      order: d.order,
      // wire-format.md, "Real-client facts": `memo` is "" or null in the real samples; the
      // emulator answers what was sent.
      memo: d.memo,
    })),
  },
});

export const bulkUpdateDepartments: RouteHandler = (ctx) => {
  const body = parseBody(departmentsSchema, ctx.body);
  return createTask(ctx, body.department_data.length, () => planTree(ctx.company, body.department_data));
};

/** `null`, `""` and absent all mean "none" for the optional references of a department. */
const orNull = (value: string | null | undefined): string | null => (value ? value : null);

function normalize(items: DepartmentInput[], errors: string[]): Department[] {
  const seen = new Set<string>();
  const siblings = new Map<string | null, number>();
  const tree: Department[] = [];
  items.forEach((item, index) => {
    if (item.code === '') {
      errors.push(`department_data[${index}]: code is required and must not be empty`);
      return;
    }
    if (seen.has(item.code)) {
      errors.push(`department ${item.code}: appears more than once in department_data`);
      return;
    }
    seen.add(item.code);
    if (item.name === '') errors.push(`department ${item.code}: name is required and must not be empty`);
    const parent = orNull(item.parent_code);
    const position = (siblings.get(parent) ?? 0) + 1;
    siblings.set(parent, position);
    tree.push({
      code: item.code,
      name: item.name,
      parent_code: parent,
      leader_member_code: orNull(item.leader_member_code),
      order: item.order ?? position,
      memo: item.memo === undefined ? null : item.memo,
    });
  });
  return tree;
}

/** One message per cycle of parent links, naming its departments in order. */
function cycleErrors(tree: Department[]): string[] {
  const parentOf = new Map(tree.map((d) => [d.code, d.parent_code]));
  // Each department is walked once: `done` holds those whose ancestry is already known.
  const done = new Set<string>();
  const errors: string[] = [];
  for (const start of tree) {
    const path: string[] = [];
    const onPath = new Set<string>();
    let code: string | null | undefined = start.code;
    while (code && !done.has(code) && !onPath.has(code)) {
      path.push(code);
      onPath.add(code);
      code = parentOf.get(code);
    }
    for (const c of path) done.add(c);
    if (!code || !onPath.has(code)) continue;
    const cycle = path.slice(path.indexOf(code));
    errors.push(`department ${code}: parent_code links form a cycle (${[...cycle, code].join(' → ')})`);
  }
  return errors;
}

function planTree(company: Company, items: DepartmentInput[]): TaskPlan {
  const { data } = company;
  const errors: string[] = [];
  const tree = normalize(items, errors);
  const codes = new Set(tree.map((d) => d.code));
  for (const d of tree) {
    if (d.parent_code === d.code) errors.push(`department ${d.code}: parent_code names the department itself`);
    else if (d.parent_code !== null && !codes.has(d.parent_code)) {
      errors.push(`department ${d.code}: parent_code "${d.parent_code}" is not a department of department_data`);
    }
    if (d.leader_member_code !== null && !data.members[d.leader_member_code]) {
      errors.push(`department ${d.code}: leader_member_code "${d.leader_member_code}" is not a member`);
    }
  }
  errors.push(...cycleErrors(tree.filter((d) => d.parent_code !== d.code)));

  // A department left out of the request would disappear: refused while members belong to it.
  const holders = new Map<string, string[]>();
  for (const [, member] of peekEntries(data.members)) {
    for (const code of [member.department_code, ...member.sub_department_codes]) {
      if (code === null || codes.has(code)) continue;
      const list = holders.get(code) ?? [];
      if (!list.includes(member.code)) list.push(member.code);
      holders.set(code, list);
    }
  }
  for (const [code, members] of holders) {
    const shown = members.slice(0, 5).join(', ') + (members.length > 5 ? ` and ${members.length - 5} more` : '');
    errors.push(`department ${code}: cannot be deleted while members belong to it (primary or concurrent): ${shown}`);
  }

  return {
    errors,
    apply: () => {
      data.departments = tree;
      // Extended access settings of kind department stop naming departments that are gone.
      data.advanced_permissions.department = data.advanced_permissions.department.map((p) => ({
        ...p,
        add_codes: p.add_codes.filter((c) => codes.has(c)),
        exclusion_codes: p.exclusion_codes.filter((c) => codes.has(c)),
      }));
    },
  };
}
