/** Messages after a redirect, picked by a fixed key so a URL cannot put text on a page. */
const FLASH: Record<string, string> = {
  published: 'Published: the new version is active in the running service.',
  reverted: 'Reverted: a new version with the old content is active.',
  saved: 'Draft saved.',
  created: 'Draft created.',
  mapped: 'Draft created: the pipeline maps the paths the unmapped guard found. Review it, then publish.',
  'nothing-to-map': 'No draft created: the active version maps every path listed (it changed since the page was shown).',
  'test-added': 'Test case saved.',
  'test-deleted': 'Test case deleted.',
  deleted: 'Draft deleted.',
  rotated: 'Key rotated: the new version is primary for protect; older versions still unprotect.',
};

export function flashOf(query: unknown): string | undefined {
  const key = (query as { done?: unknown } | undefined)?.done;
  return typeof key === 'string' && Object.hasOwn(FLASH, key) ? FLASH[key] : undefined;
}
