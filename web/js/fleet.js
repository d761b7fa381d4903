// Fleet: every device as one cell of a rack grid (colour by state, grouped site → rack, each fabric's
// switches in a row of their own), filtered and counted by the server (`/api/v1/fleet`), kept current by
// the live stream; the table below for selections small enough to read row by row. Select devices (in the
// grid with "Select" on, or in the table) and act on them after a confirmation that lists them.
import { h, api, can, badge, confirmAction, flash, fail, time, enc, STATES } from './lib.js';

const ACTIONS = ['cycle', 'on', 'off', 'reset', 'soft'];
/** Above this many matching devices the table is not drawn (the grid still is). */
const TABLE_MAX = 300;
/** `?view=table`: the table alone, for every matching device (the browser benchmark's baseline). */
const TABLE_ONLY = new URLSearchParams(location.search).get('view') === 'table';
const FABRICS = ['backend', 'storage', 'frontend', 'oob'];

const cells = new Map();
const rows = new Map();
const picked = new Set();
/** Each node's BIOS drift as the scheduled read last found it (`/api/v1/bios/drift`), by name. */
let bios = new Map();

function params() {
  const p = new URLSearchParams(location.search);
  const out = {};
  for (const k of ['state', 'role', 'rack', 'site', 'q']) if (p.get(k)) out[k] = p.get(k);
  return out;
}

function query(f, extra = {}) {
  const p = new URLSearchParams({ ...f, ...extra });
  return p.toString();
}

/** The attributes a node's BIOS differs in from its profile, in words (`''`: none known). */
function biosWords(name) {
  const b = bios.get(name);
  return b && b.drifted ? `BIOS drift: ${b.drift.map((x) => x.attribute).join(', ')}` : '';
}

function cellTitle(d) {
  const w = biosWords(d.name);
  return `${d.name} · ${d.state}${d.why ? ` — ${d.why}` : ''}${w ? ` · ${w}` : ''}`;
}

/** The table's BIOS cell: drift with the attributes (each with what it is and what the profile wants), ok, or why not read. */
function biosCell(name) {
  const b = bios.get(name);
  if (!b) return h('td', { class: 'bios', 'data-bios': 'unread' }, '—');
  if (b.drifted) {
    const detail = b.drift.map((x) => `${x.attribute}: ${x.current === null ? 'absent' : JSON.stringify(x.current)} (profile ${JSON.stringify(x.want)}${x.pending !== null ? `, pending ${JSON.stringify(x.pending)}` : ''})`);
    return h('td', { class: 'bios', 'data-bios': 'drift', title: detail.join('\n') },
      h('span', { class: 'badge b-warning' }, 'drift'), ' ', b.drift.map((x) => x.attribute).join(', '));
  }
  if (b.error) return h('td', { class: 'bios', 'data-bios': 'error', title: b.error }, 'not read');
  return h('td', { class: 'bios', 'data-bios': 'ok', title: `${b.checked} attribute(s) as the profile` }, badge('ok'));
}

function cell(d) {
  const a = h('a', { href: `/ui/node/${enc(d.name)}`, class: `c s-${d.state}${picked.has(d.name) ? ' sel' : ''}`, 'data-device': d.name, 'data-bios': bios.get(d.name)?.drifted ? 'drift' : null, title: cellTitle(d), 'aria-label': cellTitle(d) });
  cells.set(d.name, a);
  return a;
}

/** site → racks (compute and other nodes) and site → fabric → switches. */
function groups(devices) {
  const sites = new Map();
  for (const d of devices) {
    if (!sites.has(d.site)) sites.set(d.site, { racks: new Map(), switches: new Map() });
    const s = sites.get(d.site);
    if (d.role === 'switch') {
      const f = d.fabric || 'other';
      if (!s.switches.has(f)) s.switches.set(f, []);
      s.switches.get(f).push(d);
    } else {
      if (!s.racks.has(d.rack)) s.racks.set(d.rack, []);
      s.racks.get(d.rack).push(d);
    }
  }
  return sites;
}

function grid(devices) {
  const out = h('div', { id: 'grid', class: 'grid', role: 'group', 'aria-label': 'Rack grid' });
  const byName = (a, b) => a.name.localeCompare(b.name, undefined, { numeric: true });
  for (const [site, g] of [...groups(devices)].sort()) {
    const racks = [...g.racks].sort((a, b) => a[0].localeCompare(b[0], undefined, { numeric: true }));
    const switches = [...g.switches].sort((a, b) => FABRICS.indexOf(a[0]) - FABRICS.indexOf(b[0]));
    out.append(h('section', { class: 'site', 'data-site': site },
      h('h2', {}, `Site ${site || '(none)'}`),
      switches.length ? h('div', { class: 'switch-rows' }, switches.map(([f, ds]) => h('div', { class: 'swrow', 'data-fabric': f },
        h('span', { class: 'lbl' }, `${f} switches`), ds.sort(byName).map(cell)))) : null,
      h('div', { class: 'racks' }, racks.map(([rack, ds]) => h('div', { class: 'rk', 'data-rack': rack },
        h('a', { class: 'lbl', href: `/ui/fleet?${query({ ...params(), rack })}` }, rack), ds.sort(byName).map(cell))))));
  }
  return out;
}

function tableRow(d) {
  const tr = h('tr', { 'data-device': d.name, 'data-state': d.state },
    can('operator') ? h('td', {}, h('input', { type: 'checkbox', class: 'pick', value: d.name, checked: picked.has(d.name), 'aria-label': `select ${d.name}`,
      onchange: (ev) => { if (ev.target.checked) picked.add(d.name); else picked.delete(d.name); mark(d.name); } })) : null,
    h('td', { class: 'name' }, h('a', { href: `/ui/node/${enc(d.name)}`, 'data-nav': '' }, d.name)),
    h('td', {}, d.role), h('td', {}, d.rack), h('td', { class: 'state' }, badge(d.state)),
    h('td', { class: 'power' }, badge(d.power)), h('td', { class: 'health' }, badge(d.health)),
    h('td', { class: 'why' }, d.why || ''), biosCell(d.name), h('td', { class: 'faults' }, d.open_faults ? h('a', { href: `/ui/faults?device=${enc(d.name)}` }, String(d.open_faults)) : '0'));
  tr.dataset.power = d.power || '';
  rows.set(d.name, tr);
  return tr;
}

function mark(name) {
  const c = cells.get(name);
  if (c) c.classList.toggle('sel', picked.has(name));
  const tr = rows.get(name);
  const box = tr && tr.querySelector('input.pick');
  if (box) box.checked = picked.has(name);
  const n = document.getElementById('picked-count');
  if (n) n.textContent = picked.size ? `${picked.size} selected` : '';
}

function setState(name, state) {
  const c = cells.get(name);
  if (c && !c.classList.contains(`s-${state}`)) {
    c.className = `c s-${state}${picked.has(name) ? ' sel' : ''}`;
    c.title = cellTitle({ name, state });
    c.setAttribute('aria-label', c.title);
  }
  const tr = rows.get(name);
  if (tr && tr.dataset.state !== state) { tr.dataset.state = state; tr.querySelector('td.state').replaceChildren(badge(state)); }
}

function filterBar(f, page, reload) {
  const q = h('input', { id: 'filter', type: 'search', value: f.q || '', placeholder: 'Filter: name, rack, role, group or glob (gpu-node-0[1-4])', 'aria-label': 'Filter devices' });
  const state = h('select', { id: 'filter-state', 'aria-label': 'State' }, h('option', { value: '' }, 'any state'),
    STATES.map(([s, label]) => h('option', { value: s, selected: f.state === s }, `${label} (${page.counts[s] || 0})`)));
  const role = h('select', { id: 'filter-role', 'aria-label': 'Role' }, h('option', { value: '' }, 'any role'),
    ['gpu-node', 'head-node', 'storage-server', 'switch'].map((r) => h('option', { value: r, selected: f.role === r }, r)));
  if (f.role && ![...role.options].some((o) => o.value === f.role)) role.append(h('option', { value: f.role, selected: true }, f.role));
  const go = () => {
    const next = { ...f, q: q.value.trim(), state: state.value, role: role.value };
    for (const k of Object.keys(next)) if (!next[k]) delete next[k];
    history.replaceState(null, '', `/ui/fleet${Object.keys(next).length ? `?${query(next)}` : ''}`);
    reload();
  };
  const form = h('form', { class: 'bar', id: 'fleet-filter', role: 'search' }, q, ' ', state, ' ', role, ' ',
    h('button', { type: 'submit' }, 'Filter'), ' ',
    Object.keys(f).length ? h('a', { href: '/ui/fleet', id: 'clear-filter' }, 'clear') : null, ' ',
    h('span', { id: 'fleet-count', 'data-matched': page.matched, 'data-total': page.total },
      page.matched === page.total ? `${page.total} devices` : `${page.matched} of ${page.total} devices`), ' ',
    biosSummary(page));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); go(); });
  state.addEventListener('change', go);
  role.addEventListener('change', go);
  return form;
}

/** How many of the shown nodes drifted from their BIOS profile, named. */
function biosSummary(page) {
  const drifted = page.devices.filter((d) => bios.get(d.name)?.drifted).map((d) => d.name);
  return h('span', { id: 'bios-drifted', 'data-count': drifted.length, title: drifted.join(', ') },
    drifted.length ? h('span', { class: 'badge b-warning' }, `${drifted.length} with BIOS drift: ${drifted.join(', ')}`) : '');
}

function actionBar(page) {
  if (!can('operator')) return null;
  const action = h('select', { id: 'bulk-action', 'aria-label': 'Power action' }, ACTIONS.map((a) => h('option', { value: a }, `power ${a}`)));
  const selecting = h('input', { type: 'checkbox', id: 'select-mode', 'aria-label': 'select in the grid' });
  selecting.addEventListener('change', () => { document.body.dataset.selecting = selecting.checked ? 'yes' : ''; });
  const apply = h('button', { id: 'bulk-apply', class: 'danger', onclick: async () => {
    const names = [...picked];
    if (!names.length) { flash('Select devices first.', 'error'); return; }
    if (!(await confirmAction(`Power ${action.value} ${names.length} device(s)?`, names, 'Each action is audited as you.'))) return;
    const out = [];
    for (const n of names) {
      try { await api('POST', `/api/v1/devices/${enc(n)}/power`, { action: action.value }); out.push(`${n}: ok`); } catch (e) { out.push(`${n}: ${e.message}`); }
    }
    flash(out.join('; '));
  } }, 'Apply to selected');
  const all = h('button', { id: 'select-all', type: 'button', onclick: () => { page.devices.forEach((d) => { picked.add(d.name); mark(d.name); }); } }, 'Select all shown');
  const none = h('button', { id: 'select-none', type: 'button', onclick: () => { const was = [...picked]; picked.clear(); was.forEach(mark); } }, 'Clear selection');
  const sweep = h('button', { id: 'sweep', type: 'button', onclick: async () => {
    try { await api('POST', '/api/v1/sweep', {}); flash('Sweep done.'); } catch (e) { fail(e); }
  } }, 'Sweep now');
  return h('div', { class: 'bar' }, h('label', {}, selecting, ' Select in grid'), ' ', all, ' ', none, ' ',
    h('span', { id: 'picked-count' }), ' ', action, ' ', apply, ' ', sweep);
}

export async function render(main) {
  const body = h('div');
  main.append(h('h1', {}, 'Fleet'), body);
  const events = h('ol', { id: 'events', reversed: true });
  let filtered = false;
  let busy = null;
  const load = async () => {
    const f = params();
    filtered = Object.keys(f).length > 0;
    // The BIOS drift is a column beside the state: a failure to read it leaves the column empty, not the page.
    const [page, drift] = await Promise.all([api('GET', `/api/v1/fleet?${query(f, { limit: 50000 })}`),
      api('GET', '/api/v1/bios/drift').catch(() => ({ nodes: [] }))]);
    bios = new Map(drift.nodes.map((n) => [n.device, n]));
    cells.clear(); rows.clear();
    const heads = [...(can('operator') ? [''] : []), 'Device', 'Role', 'Rack', 'State', 'Power', 'Health', 'Why', 'BIOS', 'Open faults'];
    body.replaceChildren(filterBar(f, page, () => load().catch(fail)), actionBar(page),
      page.devices.length ? (TABLE_ONLY ? null : grid(page.devices)) : h('p', { id: 'no-match' }, 'No device matches this filter.'),
      page.devices.length && (TABLE_ONLY || page.devices.length <= TABLE_MAX)
        ? h('table', { class: 'fleet', id: 'fleet-table' }, h('thead', {}, h('tr', {}, heads.map((x) => h('th', { scope: 'col' }, x)))), h('tbody', {}, page.devices.map(tableRow)))
        : (page.devices.length ? h('p', { class: 'quiet' }, `The table shows at most ${TABLE_MAX} devices: filter to see it.`) : null));
    document.body.dataset.fleet = String(page.matched);
  };
  await load();
  // The drift changes only with the scheduled read (minutes apart): looked at again every 15 s, in place.
  const biosTimer = setInterval(async () => {
    let drift;
    try { drift = await api('GET', '/api/v1/bios/drift'); } catch { return; }
    bios = new Map(drift.nodes.map((n) => [n.device, n]));
    for (const [name, c] of cells) {
      c.dataset.bios = bios.get(name)?.drifted ? 'drift' : '';
      c.title = cellTitle({ name, state: [...c.classList].find((k) => k.startsWith('s-'))?.slice(2) || '' });
      c.setAttribute('aria-label', c.title);
    }
    for (const [name, tr] of rows) tr.querySelector('td.bios').replaceWith(biosCell(name));
    const sum = document.getElementById('bios-drifted');
    if (sum) sum.replaceWith(biosSummary({ devices: [...cells.keys()].map((name) => ({ name })) }));
  }, 15000);
  main.append(h('section', {}, h('h2', {}, 'Events'), events));
  // The grid: a click opens the node, or toggles the device while "Select in grid" is on.
  body.addEventListener('click', (ev) => {
    const c = ev.target.closest && ev.target.closest('a.c');
    if (!c || document.body.dataset.selecting !== 'yes') return;
    ev.preventDefault();
    const n = c.dataset.device;
    if (picked.has(n)) picked.delete(n); else picked.add(n);
    mark(n);
  });
  const es = new EventSource('/api/v1/live');
  es.addEventListener('open', () => { document.body.dataset.live = 'open'; });
  es.addEventListener('states', (ev) => {
    document.body.dataset.live = 'open';
    const states = JSON.parse(ev.data);
    // A filter's membership may change with a state: ask the server again (at most once a second).
    if (filtered) { if (!busy) busy = setTimeout(() => { busy = null; load().catch(fail); }, 1000); return; }
    for (const [name, st] of Object.entries(states)) setState(name, st);
  });
  es.addEventListener('devices', (ev) => {
    document.body.dataset.live = 'open';
    for (const d of JSON.parse(ev.data)) {
      const tr = rows.get(d.name);
      if (!tr) continue;
      tr.dataset.power = d.power || '';
      tr.querySelector('td.power').replaceChildren(badge(d.power));
      tr.querySelector('td.health').replaceChildren(badge(d.health));
    }
  });
  es.addEventListener('event', (ev) => {
    const e = JSON.parse(ev.data);
    events.prepend(h('li', {}, `${time(e.at_ms)} ${e.device || ''} [${e.severity || ''}] ${e.message || ''}`));
    while (events.children.length > 50) events.lastChild.remove();
  });
  window.addEventListener('pagehide', () => { es.close(); clearInterval(biosTimer); });
}
