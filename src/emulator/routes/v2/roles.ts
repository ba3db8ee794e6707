/** Roles (api-v2.md 4.2 Get roles; wire-format.md, Users: `{id, name, type}` with type `Adm` or general). */
import type { RouteHandler } from '../context.js';

export const listRoles: RouteHandler = (ctx) => {
  const roles = [...ctx.company.data.roles].sort((a, b) => a.id - b.id);
  return { body: { role_data: roles.map(({ id, name, type }) => ({ id, name, type })) } };
};
