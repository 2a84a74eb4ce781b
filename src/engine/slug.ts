/**
 * Policy and rule names as Eunomia stores them: lowercase, accents folded, every character outside
 * `[a-z0-9_-]` replaced by `-`, runs of `-` collapsed, leading and trailing `-` trimmed.
 */
export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '');
}
