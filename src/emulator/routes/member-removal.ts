/**
 * What deleting a member takes with it (api-v2.md 4.4 Members 4 and 5), shared by the delete and
 * replace-all operations.
 */
import type { Company } from '../company.js';

/**
 * Deletes members. A linked login user of a general-type role is deleted with the member; one of an
 * administrator-type role only loses the link and can still log in (4.4 Members 5). The member's
 * face photo and sheet records go too, their files released; a department the member led keeps no
 * leader, and extended access settings stop naming the member or a deleted user.
 */
export function removeMembers(company: Company, codes: string[]): void {
  if (!codes.length) return;
  const { data } = company;
  const gone = new Set(codes);
  const adminRoles = new Set(data.roles.filter((r) => r.type === 'Adm').map((r) => r.id));

  const deletedUsers = new Set<number>();
  data.users = data.users.filter((user) => {
    if (user.member_code === null || !gone.has(user.member_code)) return true;
    if (adminRoles.has(user.role_id)) {
      user.member_code = null;
      return true;
    }
    deletedUsers.add(user.id);
    return false;
  });

  for (const code of gone) {
    delete data.members[code];
    company.releaseFile(data.photos[code]);
    delete data.photos[code];
  }

  const now = company.now();
  for (const sheet of Object.values(data.sheets)) {
    let touched = false;
    for (const code of gone) {
      const records = sheet.records[code];
      if (!records) continue;
      for (const record of records) for (const file of Object.values(record.files)) company.releaseFile(file);
      delete sheet.records[code];
      touched = true;
    }
    if (touched) sheet.updated_at = now;
  }

  for (const department of data.departments) {
    if (department.leader_member_code !== null && gone.has(department.leader_member_code)) department.leader_member_code = null;
  }

  const perms = data.advanced_permissions;
  perms.member = perms.member
    .filter((p) => !deletedUsers.has(p.user_id))
    .map((p) => ({ ...p, add_codes: p.add_codes.filter((c) => !gone.has(c)), exclusion_codes: p.exclusion_codes.filter((c) => !gone.has(c)) }));
  perms.department = perms.department.filter((p) => !deletedUsers.has(p.user_id));
}
