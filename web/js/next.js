// Where the login page may send the user afterwards: a path of this site only, else the overview page.
// The browser's own URL parser decides, not a prefix check: it turns `/\host` (also `/%5Chost`, which
// arrives decoded), `/<TAB>/host` and `//host` into another origin, so anything whose parsed origin is not
// this one is refused, and backslashes and control characters are refused before parsing.
export const HOME = '/ui/overview';

export function safeNext(next, origin) {
  if (typeof next !== 'string' || !next.startsWith('/') || /[\\\u0000-\u001f\u007f]/.test(next)) return HOME;
  let u;
  try {
    u = new URL(next, origin);
  } catch {
    return HOME;
  }
  if (u.origin !== origin || (u.protocol !== 'https:' && u.protocol !== 'http:')) return HOME;
  return u.pathname + u.search + u.hash;
}
