// The router: `/ui/<page>[/<name>]` loads `/assets/<page>.js` and calls its `render(main, ctx)`.
import { h, api, whoami, can, fail } from './lib.js';
import { install as installKeys } from './keys.js';

// Content-Security-Policy violations, counted for the browser tests (the policy itself is the server's).
window.lifelineCspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.lifelineCspViolations.push(`${e.violatedDirective} ${e.blockedURI || ''} ${e.sourceFile || ''}:${e.lineNumber || ''}`);
});

const NAV = [
  ['overview', 'Overview'], ['fleet', 'Fleet'], ['fabrics', 'Fabrics'], ['backups', 'Backups'], ['runbooks', 'Runbooks'],
  ['faults', 'Faults'], ['audit', 'Audit log'], ['hygiene', 'BMC hygiene'], ['admin', 'Users & tokens', 'admin'],
];

async function main() {
  const [, , page = 'overview', name] = location.pathname.split('/').map(decodeURIComponent);
  const mainEl = document.getElementById('main');
  document.body.dataset.page = page;
  if (page !== 'login') {
    let me;
    try { me = await whoami(); } catch (e) { if (e.status !== 401) fail(e); return; }
    document.getElementById('nav').replaceChildren(...NAV.filter(([, , role]) => !role || can(role)).map(
      ([p, label]) => h('a', { href: `/ui/${p}`, 'aria-current': p === page ? 'page' : null }, label)));
    document.getElementById('who').replaceChildren(
      h('span', { id: 'whoami' }, `${me.user} (${me.role})`), ' ',
      h('button', { id: 'logout', onclick: async () => {
        try { await api('POST', '/api/v1/logout'); } finally { location.assign('/ui/login'); }
      } }, 'Log out'));
  }
  installKeys();
  document.title = `Lifeline — ${page}${name ? ` ${name}` : ''}`;
  try {
    const mod = await import(`./${page}.js`);
    mainEl.replaceChildren();
    await mod.render(mainEl, { name, params: new URLSearchParams(location.search) });
  } catch (e) { fail(e); }
}

main();
