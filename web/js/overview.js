// Overview, the landing page: what is broken (a count per state, each a link to the filtered fleet), what
// Lifeline is doing about it (runs in flight and their step), what needs me (approvals and escalations,
// with Approve/Abort for the roles that may), the open incidents, and the events — all from
// `/api/v1/summary` and kept current by the server's live stream.
import { h, api, badge, time, ago, reason, runWhere, runButtons, enc, STATES } from './lib.js';

function runLink(r) { return h('a', { href: `/ui/runbooks?run=${enc(r.run)}` }, `${r.runbook} ${r.run.slice(0, 8)}`); }
function nodeLink(n) { return h('a', { href: `/ui/node/${enc(n)}` }, n); }

function counts(sum) {
  return h('ul', { id: 'state-counts', class: 'counts' }, STATES.map(([s, label]) => {
    const n = sum.counts[s] || 0;
    return h('li', { class: `count s-${s}${n ? '' : ' zero'}`, 'data-state': s, 'data-count': n },
      h('a', { href: `/ui/fleet?state=${s}`, 'data-nav': '' }, h('b', {}, String(n)), ' ', label));
  }), h('li', { class: 'count total', 'data-count': sum.total },
    h('a', { href: '/ui/fleet', 'data-nav': '' }, h('b', { id: 'total' }, String(sum.total)), ' devices')));
}

function needsMe(sum, refresh) {
  if (!sum.needs_human.length) return h('p', { id: 'needs-me', class: 'quiet' }, 'Nothing waits for you.');
  return h('table', { id: 'needs-me' },
    h('thead', {}, h('tr', {}, ['Device', 'State', 'Run', 'Where / why', ''].map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, sum.needs_human.map((r) => h('tr', { 'data-run': r.run, 'data-state': r.state, 'data-target': r.target },
      h('td', {}, nodeLink(r.target)), h('td', {}, badge(r.state)), h('td', {}, runLink(r)),
      h('td', {}, r.state === 'escalated' ? reason(r.reason_summary, r.reason) : runWhere(r)),
      h('td', {}, runButtons(r, refresh))))));
}

function inFlight(sum, refresh) {
  if (!sum.in_flight.length) return h('p', { id: 'in-flight', class: 'quiet' }, 'No run in progress.');
  return h('table', { id: 'in-flight' },
    h('thead', {}, h('tr', {}, ['Device', 'Run', 'Step', 'Started', ''].map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, sum.in_flight.map((r) => h('tr', { 'data-run': r.run, 'data-target': r.target },
      h('td', {}, nodeLink(r.target)), h('td', {}, runLink(r)),
      h('td', {}, `${r.post_condition ? 'verifying: ' : ''}${runWhere(r)}`), h('td', {}, ago(r.started)),
      h('td', {}, runButtons(r, refresh))))));
}

function incidents(sum) {
  if (!sum.incidents.length) return h('p', { id: 'incidents', class: 'quiet' }, 'No open incident.');
  return h('div', {}, h('table', { id: 'incidents' },
    h('thead', {}, h('tr', {}, ['Severity', 'Device', 'Fault', 'Opened', 'Device state', 'Lifeline is'].map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, sum.incidents.map((i) => h('tr', { 'data-fault': i.fault, 'data-device': i.device },
      h('td', {}, badge(i.severity)), h('td', {}, nodeLink(i.device)),
      h('td', {}, h('a', { href: `/ui/incident/${enc(i.fault)}`, class: 'incident-link' }, `${i.kind}: ${i.message}`), i.count > 1 ? ` (×${i.count})` : ''),
      h('td', { title: time(i.opened) }, ago(i.opened)), h('td', {}, badge(i.device_state)),
      h('td', {}, i.run ? [runLink(i.run), ` ${i.run.state}`, i.run.state === 'running' ? `, ${runWhere(i.run)}` : ''] : (i.state === 'acked' ? `acknowledged by ${i.acked_by}` : 'nothing yet')))))),
  sum.incidents_total > sum.incidents.length ? h('p', {}, h('a', { href: '/ui/faults' }, `all ${sum.incidents_total} open faults`)) : null);
}

export async function render(main) {
  const parts = { counts: h('div'), needs: h('div'), flight: h('div'), incidents: h('div') };
  const stamp = h('span', { id: 'summary-at', class: 'quiet' });
  const events = h('ol', { id: 'events', reversed: true });
  main.append(h('h1', {}, 'Overview ', stamp), parts.counts,
    h('div', { class: 'cols' },
      h('section', {}, h('h2', {}, 'Needs me'), parts.needs),
      h('section', {}, h('h2', {}, 'Lifeline is doing'), parts.flight)),
    h('section', {}, h('h2', {}, 'Open incidents'), parts.incidents),
    h('section', {}, h('h2', {}, 'Events'), events));
  let shown = null;
  const last = {};
  // A part is drawn again only when its data changed, and the focus stays where it was (a live update
  // must not take the row the operator is on away from them).
  const part = (name, data, build, force) => {
    const key = JSON.stringify(data);
    if (!force && last[name] === key) return;
    last[name] = key;
    const a = document.activeElement;
    const inside = a && parts[name].contains(a);
    const holder = inside && a.parentElement ? a.parentElement.closest('[data-state],[data-run],[data-fault]') : null;
    const sel = holder ? ['state', 'run', 'fault'].map((k) => (holder.dataset[k] !== undefined ? `[data-${k}="${CSS.escape(holder.dataset[k])}"]` : '')).join('') : null;
    const what = inside ? (a.dataset.act ? `[data-act="${a.dataset.act}"]` : a.tagName.toLowerCase()) : null;
    parts[name].replaceChildren(build());
    if (sel) { const again = parts[name].querySelector(`${sel} ${what}`); if (again) again.focus(); }
  };
  const draw = (sum, force = false) => {
    shown = sum;
    part('counts', [sum.counts, sum.total], () => counts(sum), force);
    part('needs', sum.needs_human, () => needsMe(sum, refresh), force);
    part('flight', sum.in_flight, () => inFlight(sum, refresh), force);
    part('incidents', [sum.incidents, sum.incidents_total], () => incidents(sum), force);
    stamp.textContent = `as of ${time(sum.generated_at)}`;
    document.body.dataset.summary = String(sum.total);
  };
  async function refresh() { draw(await api('GET', '/api/v1/summary')); }
  await refresh();
  const es = new EventSource('/api/v1/live');
  es.addEventListener('open', () => { document.body.dataset.live = 'open'; });
  es.addEventListener('summary', (ev) => { document.body.dataset.live = 'open'; draw(JSON.parse(ev.data)); });
  es.addEventListener('event', (ev) => {
    const e = JSON.parse(ev.data);
    events.prepend(h('li', { 'data-event': e.id }, `${time(e.at_ms)} ${e.device || ''} [${e.severity || ''}] ${e.message || ''}`));
    while (events.children.length > 50) events.lastChild.remove();
  });
  // Relative times age while the page stays open.
  setInterval(() => { if (shown) draw(shown, true); }, 15000);
  window.addEventListener('pagehide', () => es.close());
}
