// The audit log: filter by actor, target, action and time; export what the filter shows as CSV or JSON.
import { h, api, badge, time, table, enc } from './lib.js';

export async function render(main, { params }) {
  const f = {};
  const field = (k, label, type = 'text') => {
    f[k] = h('input', { id: `f-${k}`, name: k, type, value: params.get(k) || '' });
    return h('label', {}, `${label} `, f[k]);
  };
  const form = h('form', { class: 'bar', id: 'audit-filter' },
    field('actor', 'Actor'), ' ', field('target', 'Target'), ' ', field('action', 'Action'), ' ',
    field('since', 'From', 'datetime-local'), ' ', field('until', 'To', 'datetime-local'), ' ',
    h('button', { type: 'submit' }, 'Filter'));
  main.append(h('h1', {}, 'Audit log'), form);
  const q = new URLSearchParams();
  for (const k of ['actor', 'target', 'action']) if (params.get(k)) q.set(k, params.get(k));
  q.set('limit', params.get('limit') || '500');
  let rows = await api('GET', `/api/v1/audit?${q}`);
  // Time is filtered here: the API filters by actor, target, action and outcome.
  const since = params.get('since') ? Date.parse(params.get('since')) : null;
  const until = params.get('until') ? Date.parse(params.get('until')) : null;
  rows = rows.filter((r) => (since === null || r.at_ms >= since) && (until === null || r.at_ms <= until));
  const exp = (fmt) => h('a', { href: `/api/v1/audit/export?${q}&format=${fmt}`, download: `audit.${fmt}` }, `Export ${fmt.toUpperCase()}`);
  main.append(h('p', { class: 'bar' }, `${rows.length} rows · `, exp('csv'), ' · ', exp('json')),
    table(['Time', 'Actor', 'Action', 'Target', 'Outcome', 'Detail'], rows.map((r) => [
      time(r.at_ms), r.actor, r.action, h('a', { href: `/ui/node/${enc(r.target)}` }, r.target), badge(r.outcome),
      h('code', {}, JSON.stringify(r.detail)),
    ]), { id: 'audit' }));
}
