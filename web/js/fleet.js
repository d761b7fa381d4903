// Fleet: every device grouped by site, rack and role, updated live from the server's SSE stream; filter,
// select several devices and act on them after a confirmation that lists them.
import { h, api, can, badge, confirmAction, flash, fail, time, enc } from './lib.js';

const ACTIONS = ['cycle', 'on', 'off', 'reset', 'soft'];
const rows = new Map();

function cells(d) {
  const reach = d.bmc ? `${d.protocol || '?'}: ${d.reachable === null || d.reachable === undefined ? 'not yet swept' : d.reachable ? 'reachable' : 'UNREACHABLE'}` : 'no BMC';
  return {
    power: badge(d.power), health: badge(d.health), reach: h('span', {}, reach),
    faults: d.open_faults ? h('a', { href: `/ui/faults?device=${enc(d.name)}` }, String(d.open_faults)) : '0',
    seen: time(d.observed_at),
  };
}

function update(d) {
  const tr = rows.get(d.name);
  if (!tr) return;
  const c = cells(d);
  for (const k of Object.keys(c)) tr.querySelector(`td.${k}`).replaceChildren(c[k]);
  tr.dataset.power = d.power || '';
  tr.classList.toggle('bad', d.reachable === false || d.health === 'critical' || d.open_faults > 0);
}

function row(d) {
  const c = cells(d);
  const tr = h('tr', { 'data-device': d.name },
    can('operator') ? h('td', {}, h('input', { type: 'checkbox', class: 'pick', value: d.name, 'aria-label': `select ${d.name}` })) : null,
    h('td', { class: 'name' }, h('a', { href: `/ui/node/${enc(d.name)}` }, d.name)),
    h('td', {}, d.role),
    ...['power', 'health', 'reach', 'faults', 'seen'].map((k) => h('td', { class: k }, c[k])));
  rows.set(d.name, tr);
  return tr;
}

export async function render(main) {
  const [inv, devices] = await Promise.all([api('GET', '/api/v1/inventory'), api('GET', '/api/v1/devices')]);
  const site = new Map(inv.map((d) => [d.name, d.site || '(no site)']));
  const filter = h('input', { id: 'filter', type: 'search', placeholder: 'Filter: name, role, rack, power, health…', 'aria-label': 'Filter devices' });
  const bar = h('div', { class: 'bar' }, filter, ` ${devices.length} devices`);
  if (can('operator')) {
    const action = h('select', { id: 'bulk-action', 'aria-label': 'Power action' }, ACTIONS.map((a) => h('option', { value: a }, `power ${a}`)));
    const apply = h('button', { id: 'bulk-apply', class: 'danger', onclick: async () => {
      const picked = [...main.querySelectorAll('input.pick:checked')].map((x) => x.value);
      if (!picked.length) { flash('Select devices first.', 'error'); return; }
      if (!(await confirmAction(`Power ${action.value} ${picked.length} device(s)?`, picked, 'Each action is audited as you.'))) return;
      const out = [];
      for (const n of picked) {
        try { await api('POST', `/api/v1/devices/${enc(n)}/power`, { action: action.value }); out.push(`${n}: ok`); } catch (e) { out.push(`${n}: ${e.message}`); }
      }
      flash(out.join('; '));
    } }, 'Apply to selected');
    const sweep = h('button', { id: 'sweep', onclick: async () => {
      try { await api('POST', '/api/v1/sweep', {}); flash('Sweep done.'); } catch (e) { fail(e); }
    } }, 'Sweep now');
    bar.append(' ', action, ' ', apply, ' ', sweep);
  }
  main.append(h('h1', {}, 'Fleet'), bar);
  // site → rack → devices (sorted by role, then name)
  const groups = new Map();
  for (const d of devices) {
    const key = `${site.get(d.name)}\u0000${d.rack}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(d);
  }
  const heads = [...(can('operator') ? [''] : []), 'Device', 'Role', 'Power', 'Health', 'BMC', 'Open faults', 'Observed'];
  for (const [key, ds] of [...groups].sort()) {
    const [s, r] = key.split('\u0000');
    ds.sort((a, b) => a.role.localeCompare(b.role) || a.name.localeCompare(b.name));
    main.append(h('section', { class: 'rack' }, h('h2', {}, `Site ${s} · rack ${r}`),
      h('table', { class: 'fleet' }, h('thead', {}, h('tr', {}, heads.map((x) => h('th', { scope: 'col' }, x)))),
        h('tbody', {}, ds.map(row)))));
  }
  devices.forEach(update);
  filter.addEventListener('input', () => {
    const q = filter.value.toLowerCase().trim();
    for (const tr of rows.values()) tr.hidden = q !== '' && !tr.textContent.toLowerCase().includes(q);
  });
  const events = h('ol', { id: 'events', reversed: true });
  main.append(h('section', {}, h('h2', {}, 'Live events'), events));
  const es = new EventSource('/api/v1/live');
  es.addEventListener('devices', (ev) => { document.body.dataset.live = 'open'; JSON.parse(ev.data).forEach(update); });
  es.addEventListener('event', (ev) => {
    const e = JSON.parse(ev.data);
    events.prepend(h('li', {}, `${time(e.at_ms)} ${e.device || ''} [${e.severity || ''}] ${e.message || ''}`));
    while (events.children.length > 50) events.lastChild.remove();
  });
  es.addEventListener('open', () => { document.body.dataset.live = 'open'; });
}
