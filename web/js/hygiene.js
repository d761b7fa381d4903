// BMC hygiene: each BMC's latest verdict (default credentials, IPMI cipher 0 / anonymous, certificates),
// read from the `audit.bmc` audit rows; an admin runs a new audit.
import { h, api, can, badge, fail, flash, time, table, enc } from './lib.js';

export async function render(main) {
  main.append(h('h1', {}, 'BMC hygiene'));
  if (can('admin')) {
    main.append(h('div', { class: 'bar' }, h('button', { id: 'run-hygiene', onclick: async (ev) => {
      ev.target.disabled = true;
      flash('Auditing every BMC (at most 3 login attempts each)…');
      try { await api('POST', '/api/v1/bmc/hygiene', {}); location.reload(); } catch (e) { fail(e); ev.target.disabled = false; }
    } }, 'Run the audit now')));
  }
  const rows = await api('GET', '/api/v1/audit?action=audit.bmc&limit=2000');
  const latest = new Map();
  for (const r of rows) if (!latest.has(r.target) || latest.get(r.target).at_ms < r.at_ms) latest.set(r.target, r);
  if (!latest.size) { main.append(h('p', {}, 'No hygiene audit has run yet.')); return; }
  main.append(table(['BMC', 'Verdict', 'Findings', 'When', 'By'], [...latest.values()].sort((a, b) => a.target.localeCompare(b.target)).map((r) => [
    h('a', { href: `/ui/node/${enc(r.target)}` }, r.target), badge(r.detail.verdict),
    h('ul', {}, (r.detail.findings || []).map((x) => h('li', {}, badge(x.severity), ` ${x.code}: ${x.message}`))),
    time(r.at_ms), r.actor,
  ]), { id: 'hygiene' }));
}
