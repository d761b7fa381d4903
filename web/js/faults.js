// Fault records: open by default; an operator acknowledges.
import { h, api, can, badge, fail, time, table } from './lib.js';

export async function render(main, { params }) {
  const state = params.get('state') || 'open';
  const device = params.get('device');
  let rows = await api('GET', `/api/v1/faults?state=${encodeURIComponent(state)}`);
  if (device) rows = rows.filter((f) => f.device === device);
  main.append(h('h1', {}, `Faults (${state}${device ? `, ${device}` : ''})`),
    h('p', { class: 'bar' }, ['open', 'acked', 'resolved'].map((s) => [h('a', { href: `/ui/faults?state=${s}` }, s), ' '])),
    rows.length ? table(['Id', 'Device', 'Kind', 'Severity', 'Message', 'Count', 'Opened', ''], rows.map((f) => [
      String(f.id), h('a', { href: `/ui/node/${encodeURIComponent(f.device)}` }, f.device), f.kind, badge(f.severity), f.message, String(f.count), time(f.opened_at_ms),
      can('operator') && f.state === 'open' ? h('button', { onclick: async (ev) => {
        try { await api('POST', `/api/v1/faults/${f.id}/ack`); ev.target.replaceWith('acked'); } catch (e) { fail(e); }
      } }, 'Ack') : (f.acked_by || ''),
    ]), { id: 'faults' }) : h('p', {}, 'No faults.'));
}
