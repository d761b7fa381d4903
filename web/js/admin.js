// Users and API tokens (admin only; the API refuses anyone else anyway).
import { h, api, badge, confirmAction, fail, flash, time, table, pre, enc } from './lib.js';

const ROLES = ['viewer', 'operator', 'admin'];

export async function render(main) {
  const [users, tokens] = await Promise.all([api('GET', '/api/v1/users'), api('GET', '/api/v1/tokens')]);
  main.append(h('h1', {}, 'Users & tokens'));
  main.append(h('h2', {}, 'Users'), table(['User', 'Role', 'State', 'Created', ''], users.map((u) => [
    u.name, u.role, u.disabled ? 'disabled' : 'active', time(u.created_at_ms),
    u.disabled ? '' : h('button', { class: 'danger', onclick: async () => {
      if (!(await confirmAction(`Disable ${u.name}?`, [u.name], 'Their sessions and tokens stop working.'))) return;
      try { await api('POST', `/api/v1/users/${enc(u.name)}/disable`); location.reload(); } catch (e) { fail(e); }
    } }, 'Disable'),
  ])));
  const name = h('input', { id: 'new-user', required: true, 'aria-label': 'user name' });
  const role = h('select', { id: 'new-role', 'aria-label': 'role' }, ROLES.map((r) => h('option', { value: r }, r)));
  const pw = h('input', { id: 'new-password', type: 'password', required: true, autocomplete: 'new-password', 'aria-label': 'password' });
  const add = h('form', { class: 'bar' }, 'Add ', name, ' as ', role, ' with password ', pw, ' ', h('button', { type: 'submit' }, 'Add user'));
  add.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try { await api('POST', '/api/v1/users', { name: name.value, role: role.value, password: pw.value }); location.reload(); } catch (e) { fail(e); }
  });
  main.append(add);
  // The tokens table is drawn again from the server after a token is created or revoked (a reload would
  // lose the new token's secret, shown once below).
  const tokensTable = (list) => table(['Id', 'User', 'Role', 'Created', 'Expires', 'State', ''], list.map((t) => [
    h('code', {}, t.id), t.username, t.role, time(t.created_at_ms), t.expires_at_ms ? time(t.expires_at_ms) : 'never',
    badge(t.revoked_at_ms ? 'revoked' : 'active'),
    t.revoked_at_ms ? '' : h('button', { class: 'danger', onclick: async () => {
      if (!(await confirmAction(`Revoke token ${t.id}?`, [`${t.id} (${t.username}, ${t.role})`]))) return;
      try { await api('DELETE', `/api/v1/tokens/${enc(t.id)}`); await redrawTokens(); } catch (e) { fail(e); }
    } }, 'Revoke'),
  ]), { id: 'tokens' });
  const tokensBox = h('div', {}, tokensTable(tokens));
  const redrawTokens = async () => tokensBox.replaceChildren(tokensTable(await api('GET', '/api/v1/tokens')));
  main.append(h('h2', {}, 'API tokens'), tokensBox);
  const tu = h('select', { 'aria-label': 'token user' }, users.filter((u) => !u.disabled).map((u) => h('option', { value: u.name }, u.name)));
  const tr = h('select', { 'aria-label': 'token role' }, h('option', { value: '' }, "user's role"), ROLES.map((r) => h('option', { value: r }, r)));
  const te = h('input', { placeholder: 'e.g. 30d (empty: never)', 'aria-label': 'expires' });
  const shown = h('div');
  const mk = h('form', { class: 'bar' }, 'Token for ', tu, ' role ', tr, ' expires ', te, ' ', h('button', { type: 'submit', id: 'create-token' }, 'Create token'));
  mk.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const r = await api('POST', '/api/v1/tokens', { user: tu.value, role: tr.value || null, expires: te.value || null });
      shown.replaceChildren(h('p', {}, 'Shown once — copy it now:'), pre(r));
      await redrawTokens();
      flash('Token created.');
    } catch (e) { fail(e); }
  });
  main.append(mk, shown);
}
