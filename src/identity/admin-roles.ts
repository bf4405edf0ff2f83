/**
 * The admin portal's rights, held as roles of a signed-in identity (a configured client's roles, an
 * external provider's roles claim, the development client). Any of them lets an admin read the
 * portal; each adds one right.
 */
export const ADMIN_ROLES = {
  /** read configuration, versions, diffs, keys, the role × field view, pipelines, audit */
  viewer: 'admin-viewer',
  /** create, edit, import and delete drafts and their test cases */
  editor: 'admin-editor',
  /** publish a draft, revert to a version, rotate keys */
  publisher: 'admin-publisher',
  /** run the tester with live keys (for the roles the admin holds); sandbox keys need no extra right */
  tester: 'admin-tester',
} as const;

export type AdminRight = keyof typeof ADMIN_ROLES;
export const ADMIN_ROLE_NAMES: readonly string[] = Object.values(ADMIN_ROLES);

export function isAdminRole(role: string): boolean {
  return ADMIN_ROLE_NAMES.includes(role);
}
