// Switch configuration backups: the version list, a coloured diff between any two versions, run now, and
// restore — always a dry-run preview first, then an explicit confirmation.
import { h, api, can, confirmAction, fail, flash, time, table, section, pre, enc } from './lib.js';

function diffView(d) {
  const lines = d.diff.split('\n').map((l) => {
    const cls = l.startsWith('+') && !l.startsWith('+++') ? 'add' : l.startsWith('-') && !l.startsWith('---') ? 'del' : l.startsWith('@@') ? 'hunk' : '';
    return h('div', { class: `dl ${cls}` }, l || ' ');
  });
  return h('div', { class: 'diff', id: 'diff' }, lines.length > 1 || d.diff ? lines : 'No difference.');
}

async function list(main) {
  // A schedule the server cannot answer is an error to show, not an empty schedule.
  const [inv, sched] = await Promise.all([api('GET', '/api/v1/inventory'), api('GET', '/api/v1/backups/schedule').catch((e) => e)]);
  const sw = inv.filter((d) => d.role === 'switch' && d.management);
  const schedule = sched instanceof Error
    ? h('p', { class: 'error', id: 'schedule-error' }, `The schedule could not be read: ${sched.message}`)
    : sched.length ? pre(sched) : h('p', {}, 'No [[backup-schedule]] entries.');
  main.append(h('h1', {}, 'Backups'),
    table(['Switch', 'Platform', 'Fabric'], sw.map((d) => [h('a', { href: `/ui/backups/${enc(d.name)}` }, d.name), (d.switch && d.switch.platform) || '—', (d.fabrics || []).join(', ')]), { id: 'backup-switches' }),
    section('Schedule', h('div', { id: 'schedule' }, schedule)));
}

export async function render(main, { name }) {
  if (!name) return list(main);
  const versions = await api('GET', `/api/v1/backups/${enc(name)}`);
  main.append(h('h1', {}, `Backups of ${name}`));
  if (can('operator')) {
    main.append(h('div', { class: 'bar' }, h('button', { id: 'run-backup', onclick: async () => {
      try { await api('POST', '/api/v1/backups/run', { targets: [name] }); location.reload(); } catch (e) { fail(e); }
    } }, 'Run backup now')));
  }
  main.append(section('Versions', table(['Version', 'Taken', 'Size', 'SHA-256'],
    versions.map((v) => [String(v.version), time(v.taken_at), `${v.size} B`, h('code', {}, v.sha256.slice(0, 16))]), { id: 'versions' })));
  if (!versions.length) return;
  const opts = (sel) => versions.map((v) => h('option', { value: v.version, selected: sel === v.version }, `v${v.version}`));
  const newest = versions[versions.length - 1].version;
  const oldest = versions[0].version;
  const from = h('select', { id: 'diff-from', 'aria-label': 'from version' }, opts(versions.length > 1 ? versions[versions.length - 2].version : oldest));
  const to = h('select', { id: 'diff-to', 'aria-label': 'to version' }, opts(newest));
  const out = h('div');
  const show = async () => {
    try { out.replaceChildren(diffView(await api('GET', `/api/v1/backups/${enc(name)}/diff?from=${from.value}&to=${to.value}`))); } catch (e) { fail(e); }
  };
  main.append(section('Diff', h('div', { class: 'bar' }, 'from ', from, ' to ', to, ' ', h('button', { id: 'show-diff', onclick: show }, 'Show diff')), out));
  await show();
  if (!can('operator')) return;
  const rv = h('select', { id: 'restore-version', 'aria-label': 'version to restore' }, opts(newest));
  const preview = h('div');
  const go = h('button', { id: 'restore-apply', class: 'danger', disabled: true, onclick: async () => {
    if (!(await confirmAction(`Restore ${name} to v${rv.value}?`, [name], 'The running configuration is replaced; audited as you.'))) return;
    try { const r = await api('POST', `/api/v1/backups/${enc(name)}/restore`, { version: Number(rv.value), dry_run: false }); preview.replaceChildren(pre(r)); flash(`Restore: ${r.outcome}`); } catch (e) { fail(e); }
  } }, 'Restore');
  main.append(section('Restore', h('div', { class: 'bar' }, 'version ', rv, ' ',
    h('button', { id: 'restore-preview', onclick: async () => {
      try {
        const r = await api('POST', `/api/v1/backups/${enc(name)}/restore`, { version: Number(rv.value), dry_run: true });
        preview.replaceChildren(h('p', {}, `Dry run: what restoring v${r.version} would change on the running configuration`), diffView(r), h('ol', {}, (r.steps || []).map((s) => h('li', {}, s))));
        go.disabled = false;
      } catch (e) { fail(e); }
    } }, 'Preview (dry run)'), ' ', go), preview));
}
