/** Roles (api-v2.md 4.2 Get roles; wire-format.md, Users: `{id, name, type}`). */
import type { Role } from '../../model.js';
import type { RouteHandler } from '../context.js';

/**
 * The role `type` the service answers, in the roles list and in `user.role`: `"Adm"` for
 * administrators and `"一般"` for the others (wire-format.md, "Real-client facts"). The model keeps
 * `General` for the others, so seeds and saved states of either spelling mean the same.
 */
export const roleTypeOnWire = (role: Role): 'Adm' | '一般' => (role.type === 'Adm' ? 'Adm' : '一般');

export const roleView = (role: Role): { id: number; name: string; type: 'Adm' | '一般' } => ({ id: role.id, name: role.name, type: roleTypeOnWire(role) });

export const listRoles: RouteHandler = (ctx) => {
  const roles = [...ctx.company.data.roles].sort((a, b) => a.id - b.id);
  return { body: { role_data: roles.map(roleView) } };
};
