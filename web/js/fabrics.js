// The four networks as the inventory describes them (backend rails, storage, frontend, OOB), with the
// devices that are unreachable, critical or carry open faults marked.
import { h, api, badge, table, enc } from './lib.js';

const FABRICS = [['backend', 'Backend (GPU rails)'], ['storage', 'Storage'], ['frontend', 'Frontend'], ['oob', 'Out-of-band']];

export async function render(main) {
  const [inv, devices] = await Promise.all([api('GET', '/api/v1/inventory'), api('GET', '/api/v1/devices')]);
  const seen = new Map(devices.map((d) => [d.name, d]));
  const state = (name) => {
    const d = seen.get(name) || {};
    if (d.reachable === false) return 'down';
    if (d.health === 'critical' || d.open_faults > 0) return 'degraded';
    if (d.health === 'warning') return 'warning';
    return d.health || 'unknown';
  };
  main.append(h('h1', {}, 'Fabrics'));
  for (const [fab, title] of FABRICS) {
    const members = inv.filter((d) => (d.fabrics || []).includes(fab) || (fab === 'oob' && d.bmc));
    const rows = members.map((d) => {
      const rails = (d.rail || d.rails || []).filter((r) => r.fabric === fab);
      const st = state(d.name);
      const tr = h('tr', { class: st === 'down' || st === 'degraded' ? 'bad' : '' },
        h('td', {}, h('a', { href: `/ui/node/${enc(d.name)}` }, d.name)), h('td', {}, d.role),
        h('td', {}, fab === 'oob' && d.bmc ? `BMC ${d.bmc.address}` : rails.length ? rails.map((r) => `${r.hca}/${r.netdev} ${r.address || ''}`).join(', ') : (d.switch && d.switch.tier ? `${d.switch.tier} switch` : '—')),
        h('td', {}, badge(st)));
      return tr;
    });
    const bad = members.filter((d) => ['down', 'degraded'].includes(state(d.name))).length;
    main.append(h('section', { 'data-fabric': fab }, h('h2', {}, `${title} — ${members.length} devices${bad ? `, ${bad} down or degraded` : ''}`),
      table(['Device', 'Role', 'Rails / ports', 'State'], rows)));
  }
}
