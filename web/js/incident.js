// One incident (`/ui/incident/<fault id>`): the fault and everything done about it, oldest first — the runs
// it started and their steps with evidence digests, approvals, power actions, drain and re-admission,
// the console around each power action, the agent's report. Every value from the API goes in as text.
import { h, api, badge, time, table, section, pre, enc, ago, reason } from './lib.js';

function entryRow(e) {
  return h('li', { 'data-kind': e.kind, 'data-run': e.run || null, 'data-at': e.at || null },
    h('span', { class: 't', title: time(e.at) }, time(e.at)), h('span', { class: 'k' }, e.kind),
    h('span', {}, e.run ? h('a', { href: `/ui/runbooks?run=${enc(e.run)}` }, e.title) : e.title,
      e.detail ? [' — ', reason(e.detail, e.full || e.detail)] : null,
      e.evidence_digest ? [' ', h('code', { class: 'digest', title: 'evidence digest' }, e.evidence_digest)] : null,
      e.console ? h('details', { class: 'console-excerpt' }, h('summary', {}, 'console'), pre(e.console)) : null));
}

export async function render(main, { name }) {
  const inc = await api('GET', `/api/v1/incidents/${enc(name)}`);
  const f = inc.fault;
  const d = inc.device;
  main.append(h('h1', {}, `Incident ${f.id}: ${f.kind} on `, h('a', { href: `/ui/node/${enc(f.device)}`, id: 'incident-node' }, f.device)),
    h('p', { id: 'incident-state', class: 'bar', 'data-state': inc.resolved ? 'resolved' : f.state },
      badge(f.severity), ' ', badge(inc.resolved ? 'resolved' : f.state), ' ',
      `opened ${time(f.opened_at_ms)} (${ago(f.opened_at_ms)})`,
      inc.resolved ? `, resolved ${time(inc.resolved)}` : '',
      d ? [' — device now ', badge(d.state), d.why ? ` ${d.why}` : ''] : ' — the device is no longer in the inventory'),
    h('p', { id: 'incident-message' }, f.message));
  main.append(section('Runs', inc.runs.length
    ? table(['Run', 'Runbook', 'State', 'Started by', 'Started', 'Ended', 'Why'], inc.runs.map((r) => h('tr', { 'data-run': r.run },
      h('td', {}, h('a', { href: `/ui/runbooks?run=${enc(r.run)}` }, r.run)), h('td', {}, r.runbook), h('td', {}, badge(r.state)),
      h('td', {}, r.actor), h('td', {}, time(r.started)), h('td', {}, time(r.ended)),
      h('td', {}, r.reason ? reason(r.reason_summary, r.reason) : '—'))), { id: 'incident-runs' })
    : h('p', { id: 'incident-runs', class: 'quiet' }, 'No run was started for this fault.')));
  main.append(section('What happened, oldest first',
    h('ol', { id: 'incident-timeline', class: 'timeline' }, inc.entries.map(entryRow))));
  main.append(section('Evidence digests', inc.evidence.length
    ? table(['Run', 'Step', 'Outcome', 'Digest', 'At'], inc.evidence.map((e) => [e.run, e.step, badge(e.state), h('code', {}, e.digest), time(e.at)]), { id: 'incident-evidence' })
    : h('p', { id: 'incident-evidence', class: 'quiet' }, 'No step recorded evidence.')));
  main.append(section('The fault as recorded', h('details', {}, h('summary', {}, 'detail'), pre(f.detail))));
}
