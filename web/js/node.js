// One node: inventory and last observation, power buttons (confirmed), sensors, SEL, FRU, certificate
// pin, agent report and scheduler observations, open faults, audit trail. BMC text goes in as text only.
import { h, api, can, badge, confirmAction, flash, fail, time, table, section, pre, enc, ago, reason } from './lib.js';
import { mediaBar } from './node_media.js';

const POWER = [['cycle', 'Power cycle'], ['reset', 'Hard reset'], ['soft', 'Soft off'], ['off', 'Power off'], ['on', 'Power on']];

async function load(el, fn) {
  try { el.replaceChildren(await fn()); } catch (e) { el.replaceChildren(h('p', { class: 'error' }, e.message)); }
}

export async function render(main, { name }) {
  const [d, tl] = await Promise.all([api('GET', `/api/v1/devices/${enc(name)}`), api('GET', `/api/v1/devices/${enc(name)}/timeline`)]);
  const o = d.observed || {};
  const st = tl.device;
  // The state in words first ("recovering …: step verify (2 of 3), since 40 s ago" / "escalated by …").
  const words = `${st.state}${st.why ? `: ${st.why}` : ''}${st.since ? `, since ${ago(st.since)}` : ''}`;
  main.append(h('h1', {}, `Node ${d.name}`),
    h('p', { id: 'node-state', class: `state-line s-${st.state}`, 'data-state': st.state }, words,
      st.run ? [' — ', h('a', { href: `/ui/runbooks?run=${enc(st.run)}` }, `run ${st.run}`)] : null),
    h('p', { class: 'bar' }, badge(o.power), ' ', badge(o.health), ' ',
      h('a', { href: `/ui/console/${enc(d.name)}`, id: 'open-console' }, 'Console'), ' · ',
      h('a', { href: `/ui/audit?target=${enc(d.name)}` }, 'Full audit log'), ' · ',
      h('a', { href: `/ui/runbooks?target=${enc(d.name)}`, id: 'node-runs' }, 'Runbook runs')));
  if (can('operator') && d.bmc) {
    const result = h('span', { id: 'power-result' });
    main.append(h('div', { class: 'bar', id: 'power-buttons' }, POWER.map(([a, label]) => h('button', {
      'data-action': a, class: a === 'on' ? '' : 'danger',
      onclick: async () => {
        if (!(await confirmAction(`${label} ${d.name}?`, [`${d.name} (BMC ${d.bmc.address}, ${d.bmc.protocol})`], 'Audited as you.'))) return;
        result.textContent = `${label}…`;
        try {
          const r = await api('POST', `/api/v1/devices/${enc(d.name)}/power`, { action: a });
          result.textContent = `${label}: ${r.outcome || r.state || 'done'}`;
          flash(`${label} ${d.name}: done`);
        } catch (e) { result.textContent = ''; fail(e); }
      },
    }, label)), ' ', result));
  }
  if (can('operator') && d.bmc && d.bmc.protocol !== 'ipmi') main.append(mediaBar(d));
  if (can('admin') && d.bmc && d.bmc.protocol !== 'ipmi') {
    // Re-pin after an intended certificate replacement: the pinned and the presented fingerprints are shown
    // first, and the re-pin carries the one shown (a certificate swapped in between is refused, both named).
    const out = h('span', { id: 'trust-result' });
    main.append(h('div', { class: 'bar', id: 'trust' }, h('button', {
      id: 'trust-check',
      onclick: async () => {
        out.textContent = 'reading the certificate…';
        try {
          const v = await api('GET', `/api/v1/devices/${enc(d.name)}/trust`);
          if (!v.changes) { out.textContent = `Pinned certificate is the one presented: ${v.presented}`; return; }
          out.textContent = '';
          const items = [`pinned:    ${v.pinned || 'nothing yet'}`, `presented: ${v.presented}`];
          if (!(await confirmAction(`Trust the certificate ${d.name} presents now?`, items,
            'Check the presented fingerprint out of band (the BMC\'s own page or console) first. Audited as you.'))) return;
          const r = await api('POST', `/api/v1/devices/${enc(d.name)}/trust`, { expected_fingerprint: v.presented });
          out.textContent = `Re-pinned ${r.current}`;
          flash(`${d.name}: certificate re-pinned`);
        } catch (e) { out.textContent = ''; fail(e); }
      },
    }, 'Check certificate'), ' ', out));
  }
  const timeline = h('ol', { id: 'timeline', class: 'timeline' }, tl.entries.length ? tl.entries.map((e) => h('li', { 'data-kind': e.kind, 'data-run': e.run || null },
    h('span', { title: time(e.at) }, time(e.at)), h('span', { class: 'k' }, e.kind),
    h('span', {}, e.run ? h('a', { href: `/ui/runbooks?run=${enc(e.run)}` }, e.title) : e.title,
      e.detail ? [' — ', reason(e.detail, e.full || e.detail)] : null,
      e.evidence_digest ? [' ', h('code', { title: 'evidence digest' }, e.evidence_digest.slice(0, 19))] : null,
      e.fault ? [' ', h('a', { href: `/ui/incident/${enc(e.fault)}`, class: 'incident-link' }, `incident ${e.fault}`)] : null))) : h('li', {}, 'Nothing recorded yet.'));
  main.append(section('Timeline', timeline));
  const summary = h('div'), sensors = h('div'), sel = h('div'), evidence = h('div'), faults = h('div'), audit = h('div');
  const biosEl = h('div', { id: 'bios' });
  main.append(
    section('Summary', summary), section('Sensors', sensors), section('BIOS against its profile', biosEl), section('System event log (SEL)', sel),
    section('Certificate, agent and scheduler', evidence), section('Open faults', faults), section('Audit trail', audit));
  const b = d.bmc || {};
  summary.append(table(['Field', 'Value'], [
    ['Role', d.role], ['Rack', `${d.site || ''} / ${d.rack}`], ['Model (FRU)', d.model || '—'],
    ['GPUs', d.gpus ? `${d.gpus.count} × ${d.gpus.model || ''}` : '—'],
    ['BMC', b.address ? `${b.address} (${b.protocol}${b.flavor ? `, ${b.flavor}` : ''})` : 'none'],
    ['Reachable', o.reachable === undefined || o.reachable === null ? 'not yet swept' : String(o.reachable)],
    ['Observed', time(o.observed_at)],
  ]));
  if (!d.bmc) { sensors.append('No BMC.'); sel.append('No BMC.'); } else {
    load(sensors, async () => {
      const hs = await api('GET', `/api/v1/devices/${enc(name)}/health`);
      return h('div', {}, h('p', {}, 'Rollup: ', badge(hs.health), ` over ${hs.protocol}`),
        table(['Sensor', 'Kind', 'Reading', 'Health'], hs.sensors.map((s) => [s.name, s.kind,
          s.reading === null ? (s.state || '—') : `${s.reading} ${s.units || ''}`, badge(s.health)])),
        hs.warnings.length ? pre(hs.warnings.join('\n')) : null);
    });
    load(sel, async () => {
      const log = await api('GET', `/api/v1/devices/${enc(name)}/sel?newest=50`);
      return table(['Id', 'Time', 'Severity', 'Message'],
        log.entries.map((e) => [e.id, e.time ? time(e.time) : (e.time_note || '—'), badge(e.severity), h('span', { class: 'sel-message' }, e.message)]),
        { id: 'sel' });
    });
  }
  // The scheduled read's drift from the role's golden profile (`[server] bios-drift-interval`).
  load(biosEl, async () => {
    const v = await api('GET', `/api/v1/bios/drift?device=${enc(name)}`);
    const b = v.nodes[0];
    if (!b) return h('p', { 'data-bios': 'unread' }, v.interval ? 'Not read yet.' : 'Not read: [server] bios-drift-interval is off.');
    const when = `read ${time(b.read_at)}${b.error ? ` — the last read failed: ${b.error}` : ''}`;
    if (!b.drifted) return h('p', { 'data-bios': b.error ? 'error' : 'ok' }, badge('ok'), ` ${b.checked} attribute(s) as the profile wants, ${when}`);
    const show = (x) => (x === null || x === undefined ? '—' : JSON.stringify(x));
    return h('div', { 'data-bios': 'drift' }, h('p', {}, h('span', { class: 'badge b-warning' }, 'drift'), ` ${b.drift.length} of ${b.checked} attribute(s) differ, ${when}`),
      table(['Attribute', 'In force', 'Profile', 'Pending (next reset)'], b.drift.map((x) => [x.attribute, show(x.current), show(x.want), show(x.pending)]), { id: 'bios-drift' }));
  });
  load(evidence, async () => {
    const ev = await api('GET', `/api/v1/devices/${enc(name)}/evidence`);
    const obs = ev.observations || {};
    return h('div', {},
      table(['Field', 'Value'], [['BMC protocol', ev.protocol || '—'], ['TLS certificate pin', ev.tls_pin || 'not pinned (IPMI, or never contacted)']]),
      ...['agent', 'verify', 'scheduler', 'drain'].map((k) => h('details', { open: k === 'agent' && !!obs[k] },
        h('summary', {}, `${k}: ${obs[k] ? `observed ${time(obs[k].observed_at)}` : 'nothing recorded'}`),
        obs[k] ? pre(obs[k].value) : null)));
  });
  load(faults, async () => {
    const fs = (await api('GET', '/api/v1/faults?state=open')).filter((f) => f.device === name);
    return fs.length ? table(['Id', 'Kind', 'Severity', 'Message', 'Opened'], fs.map((f) => [h('a', { href: `/ui/incident/${enc(f.id)}`, class: 'incident-link' }, String(f.id)), f.kind, badge(f.severity), f.message, time(f.opened_at_ms)])) : h('p', {}, 'None.');
  });
  load(audit, async () => {
    const rows = await api('GET', `/api/v1/audit?target=${enc(name)}&limit=50`);
    return table(['Time', 'Actor', 'Action', 'Outcome'], rows.map((r) => [time(r.at_ms), r.actor, r.action, badge(r.outcome)]), { id: 'node-audit' });
  });
}
