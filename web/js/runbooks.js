// Runbooks: `/ui/runbooks` the catalogue and recent runs (`?target=NODE`: that node's runs);
// `/ui/runbooks/NAME` one runbook: the dry-run plan first (targets, steps, approvals, the guard's verdict),
// then Start; `/ui/runbooks?run=ID` one run, following the server's SSE stream (steps, journal,
// evidence digests, approvals). Buttons a role may not use are not rendered; the API refuses them anyway.
import { h, api, can, badge, confirmAction, flash, fail, time, table, section, enc } from './lib.js';

const mayAct = (rb) => can(rb && rb.admin_only ? 'admin' : 'operator');

function runsTable(runs) {
  return runs.length ? table(['Run', 'Runbook', 'Target', 'State', 'Created', 'Reason'], runs.map((r) => [
    h('a', { href: `/ui/runbooks?run=${enc(r.run)}`, class: 'run-link' }, r.run), r.runbook,
    h('a', { href: `/ui/node/${enc(r.target)}` }, r.target), badge(r.state), time(r.created), r.reason || '']),
  { id: 'runs' }) : h('p', { id: 'runs' }, 'No runs.');
}

async function catalogue(main, target) {
  const list = await api('GET', '/api/v1/runbooks');
  main.append(h('h1', {}, target ? `Runbook runs on ${target}` : 'Runbooks'));
  if (!target) {
    main.append(section('Catalogue', table(['Name', 'Applies to', 'Steps', 'Description'], list.map((r) => [
      h('a', { href: `/ui/runbooks/${enc(r.name)}` }, r.name), r.targets.join(', '),
      `${r.steps}${r.approval_steps ? ` (${r.approval_steps} need approval)` : ''}${r.admin_only ? ' · admin' : ''}`,
      r.description]), { id: 'runbook-catalogue' })));
  }
  const runs = await api('GET', `/api/v1/runs?limit=50${target ? `&target=${enc(target)}` : ''}`);
  main.append(section('Runs', runsTable(runs)));
}

function planView(plans) {
  return h('div', { id: 'plan' }, plans.map((p) => h('section', { class: 'plan', 'data-target': p.target },
    h('h3', {}, `${p.target}: `, p.guard.allowed ? badge('ok') : badge('refused'), ' ',
      p.guard.allowed ? `guard allows it (${p.guard.active_rack} active in the rack, ${p.guard.in_recovery} of ${p.guard.group_size} in recovery)` : p.guard.reason),
    table(['#', 'Step', 'Kind', 'Operation', 'When', 'Approval'], p.steps.map((s, i) => [String(i + 1), s.name, s.kind,
      JSON.stringify(s.operation), s.when || '', s.approval_required ? 'required' : '']), { class: 'plan-steps' }))));
}

async function runbook(main, name) {
  const rb = await api('GET', `/api/v1/runbooks/${enc(name)}`);
  main.append(h('h1', {}, `Runbook ${rb.name}`), h('p', {}, rb.description),
    table(['', ''], [['Fault', rb.fault], ['Touches', rb.touches], ['Never touches', rb.never_touches],
      ['Worst case', rb.worst_case], ['Applies to', rb.targets.join(', ')], ['Role needed', rb.admin_only ? 'admin' : 'operator']]));
  const targets = h('input', { id: 'targets', 'aria-label': 'Targets', placeholder: 'gpu-node-05, r01, gpu-node-0[1-4]' });
  const vars = rb.params.map((p) => [p.name, h('input', { 'data-var': p.name, value: p.default, 'aria-label': p.name, title: p.description })]);
  const planned = h('div');
  const request = () => ({
    targets: targets.value.split(/[\s,]+/).filter(Boolean),
    vars: Object.fromEntries(vars.filter(([n, i]) => i.value !== rb.params.find((p) => p.name === n).default).map(([n, i]) => [n, i.value])),
  });
  const showPlan = async () => {
    try {
      const plans = await api('POST', `/api/v1/runbooks/${enc(name)}/plan`, request());
      const start = mayAct(rb) && plans.some((p) => p.guard.allowed) ? h('button', { id: 'start-button', class: 'danger', onclick: async () => {
        const ts = plans.map((p) => p.target);
        if (!(await confirmAction(`Run ${name} on ${ts.length} target(s)?`, ts, 'Each run is audited as you and acts as runbook:<run id>.'))) return;
        try {
          const runs = await api('POST', `/api/v1/runbooks/${enc(name)}/runs`, request());
          flash(runs.map((r) => `${r.run} on ${r.target}: ${r.state}${r.reason ? ` (${r.reason})` : ''}`).join('; '));
          if (runs.length === 1) location.assign(`/ui/runbooks?run=${enc(runs[0].run)}`);
          else planned.replaceChildren(runsTable(runs));
        } catch (e) { fail(e); }
      } }, 'Start run') : null;
      planned.replaceChildren(planView(plans), start);
    } catch (e) { fail(e); }
  };
  main.append(section('Run it',
    h('p', { class: 'bar' }, h('label', {}, 'Targets ', targets), ' ', h('button', { id: 'plan-button', onclick: showPlan }, 'Show the plan')),
    vars.length ? table(['Parameter', 'Value'], vars) : null, planned),
  section('Steps', table(['#', 'Step', 'Kind', 'Timeout', 'On failure', 'Approval'], rb.steps.map((s, i) => [
    String(i + 1), s.name, s.kind, s.timeout, JSON.stringify(s.on_failure), s.approve ? 'required' : '']))));
}

async function run(main, id) {
  const head = h('div'), steps = h('div'), journal = h('div'), buttons = h('p', { class: 'bar', id: 'run-buttons' });
  main.append(head, buttons, section('Steps', steps), section('Journal', journal));
  let rb = null;
  const draw = async (v) => {
    if (!rb) rb = await api('GET', `/api/v1/runbooks/${enc(v.runbook)}`).catch(() => ({}));
    head.replaceChildren(h('h1', {}, `Run ${v.run}`), h('p', { class: 'bar' }, h('span', { id: 'run-state', 'data-state': v.state }, badge(v.state)),
      ` ${v.runbook} on `, h('a', { href: `/ui/node/${enc(v.target)}` }, v.target), ` · started by ${v.actor} ${time(v.created)}`,
      v.ended ? ` · ended ${time(v.ended)}` : ''), v.reason ? h('p', { id: 'run-reason' }, v.reason) : '');
    steps.replaceChildren(table(['Step', 'Kind', 'State', 'Started', 'Ended', 'Message', 'Evidence'], v.steps.map((s) => h('tr', { 'data-step': s.name, 'data-state': s.state },
      [s.name, s.kind, badge(s.state), time(s.started), time(s.ended), s.message || '', s.evidence_digest || ''].map((c) => h('td', {}, c)))), { id: 'run-steps' }));
    const act = (label, path, cls) => h('button', { id: label.toLowerCase(), class: cls, onclick: async () => {
      if (!(await confirmAction(`${label} run ${v.run}?`, [`${v.runbook} on ${v.target}`], 'Audited as you.'))) return;
      try { draw(await api('POST', `/api/v1/runs/${enc(v.run)}/${path}`)); flash(`${label}: done`); } catch (e) { fail(e); }
    } }, label);
    const live = ['running', 'waiting-approval'].includes(v.state);
    buttons.replaceChildren(...(mayAct(rb) && live ? [v.state === 'waiting-approval' ? act('Approve', 'approve', '') : '', ' ', act('Abort', 'abort', 'danger')] : []));
    const rows = await api('GET', `/api/v1/runs/${enc(v.run)}/journal`);
    journal.replaceChildren(table(['Time', 'Step', 'Attempt', 'Phase', 'State', 'Detail', 'Evidence'], rows.map((j) => [time(j.at_ms), j.step, String(j.attempt), j.phase, badge(j.state),
      (j.detail && j.detail.message) || '', j.evidence && j.evidence.digest ? j.evidence.digest : '']), { id: 'journal' }));
  };
  await draw(await api('GET', `/api/v1/runs/${enc(id)}`));
  const es = new EventSource('/api/v1/live');
  es.addEventListener('open', () => { document.body.dataset.live = 'open'; });
  es.addEventListener('run', (ev) => { const v = JSON.parse(ev.data); if (v.run === id) draw(v).catch(fail); });
}

export async function render(main, { name, params }) {
  if (params.get('run')) return run(main, params.get('run'));
  if (name) return runbook(main, name);
  return catalogue(main, params.get('target'));
}
