// Shared helpers for every page. Everything the server or a BMC says is put into the page with
// textContent (never innerHTML), so a SEL message or sensor name carrying markup shows as text.

const ROLES = ['viewer', 'operator', 'admin'];

/** Builds an element: `h('a', {href: '/x', class: 'c', onclick: fn}, 'text', child)`. */
export function h(tag, attrs = {}, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'checked' || k === 'value' || k === 'disabled') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

export function cookie(name) {
  const c = document.cookie.split(';').map((s) => s.trim().split('=')).find(([k]) => k === name);
  return c ? decodeURIComponent(c.slice(1).join('=')) : '';
}

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

/** Calls the JSON API with the session cookie and, on mutating requests, the CSRF header. */
export async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (method !== 'GET') headers['X-CSRF-Token'] = cookie('lifeline_csrf');
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const resp = await fetch(path, {
    method, headers, credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await resp.text();
  let data = text;
  try { data = text ? JSON.parse(text) : null; } catch { /* plain text */ }
  if (resp.status === 401 && !location.pathname.startsWith('/ui/login')) {
    location.assign(`/ui/login?next=${encodeURIComponent(location.pathname + location.search)}`);
  }
  if (!resp.ok) throw new ApiError(resp.status, data);
  return data;
}

/** The API's answer, or null when the route does not exist on this server (404 with no JSON class). */
export async function optional(path) {
  try { return await api('GET', path); } catch (e) {
    if (e.status === 404 && !(e.body && e.body.class)) return null;
    throw e;
  }
}

export let me = null;
export async function whoami() { me = await api('GET', '/api/v1/me'); return me; }
/** Whether the caller's role is at least `role` (buttons the role may not use are not rendered). */
export function can(role) { return !!me && ROLES.indexOf(me.role) >= ROLES.indexOf(role); }

export function flash(msg, kind = 'info') {
  const f = document.getElementById('flash');
  f.textContent = msg;
  f.className = kind;
}

export function fail(e) { flash(e && e.message ? e.message : String(e), 'error'); }

/** A modal confirmation listing what will be hit; resolves to true on Confirm. */
export function confirmAction(title, items, note = '') {
  const d = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-list').replaceChildren(...items.map((i) => h('li', {}, i)));
  document.getElementById('confirm-note').textContent = note;
  return new Promise((resolve) => {
    d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
    d.returnValue = 'cancel';
    d.showModal();
    document.getElementById('confirm-cancel').focus();
  });
}

export function time(ms) {
  if (ms === null || ms === undefined) return '—';
  const d = typeof ms === 'number' ? new Date(ms) : new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

/** A table from header names and rows (arrays of strings or nodes). */
export function table(heads, rows, attrs = {}) {
  return h('table', attrs,
    h('thead', {}, h('tr', {}, heads.map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, rows.map((r) => (r instanceof Node ? r : h('tr', {}, r.map((c) => h('td', {}, c)))))));
}

export function section(title, ...kids) { return h('section', {}, h('h2', {}, title), ...kids); }

export function badge(value, fallback = 'unknown') {
  const v = value === null || value === undefined ? fallback : String(value);
  return h('span', { class: `badge b-${v.replace(/[^a-z0-9-]/gi, '')}` }, v);
}

export function pre(value) {
  return h('pre', {}, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
}

/** Downloads text as a file (console log, audit export). */
export function download(name, text, type = 'text/plain') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export const enc = encodeURIComponent;

/** The device states of `/api/v1/summary` and `/api/v1/fleet`, in precedence order, with their labels. */
export const STATES = [
  ['escalated', 'Escalated — needs a human'], ['waiting-approval', 'Waiting for approval'],
  ['verifying', 'Verifying'], ['recovering', 'Recovering'], ['unreachable', 'Unreachable'],
  ['faulted', 'Faulted'], ['drained-by-lifeline', 'Drained by Lifeline'], ['unknown', 'Not observed'],
  ['healthy', 'Healthy'],
];

/** How long ago a timestamp was, in words ("40 s ago"). */
export function ago(t) {
  if (!t) return '';
  const s = Math.max(0, Math.round((Date.now() - new Date(t).getTime()) / 1000));
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  if (s < 172800) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

/** A long reason shown as its summary, the whole text one click away. */
export function reason(summary, full) {
  if (!full) return '';
  if (!summary || summary === full) return h('span', { class: 'reason' }, full);
  return h('details', { class: 'reason' }, h('summary', {}, summary), h('pre', {}, full));
}

/** Where a run is, in words: "step verify (2 of 3), started 40 s ago". */
export function runWhere(r) {
  const step = r.step ? `step ${r.step} (${r.step_number} of ${r.steps})` : `step ${r.step_number}`;
  const since = r.step_started || r.updated || r.started;
  return `${step}${since ? `, since ${ago(since)}` : ''}`;
}

/** Approve / Abort buttons for a run, when the caller's role may use them (admin runbooks: admin). */
export function runButtons(r, after) {
  const need = r.admin_only ? 'admin' : 'operator';
  if (!can(need)) return null;
  const act = (what, label, cls) => h('button', {
    class: cls, 'data-run': r.run, 'data-act': what,
    onclick: async () => {
      if (!(await confirmAction(`${label} run ${r.run} of ${r.runbook}?`, [r.target], 'Audited as you.'))) return;
      try { await api('POST', `/api/v1/runs/${enc(r.run)}/${what}`); flash(`${label}: ${r.target}`); if (after) after(); } catch (e) { fail(e); }
    },
  }, label);
  return h('span', { class: 'acts' },
    r.state === 'waiting-approval' ? act('approve', 'Approve', '') : null, ' ',
    r.state === 'waiting-approval' || r.state === 'running' ? act('abort', 'Abort', 'danger') : null);
}
