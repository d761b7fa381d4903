// Log in: sets the HttpOnly session cookie and the CSRF cookie, then goes where the user was going.
import { h, api, fail, flash } from './lib.js';
import { safeNext } from './next.js';

export function render(main, { params }) {
  const user = h('input', { id: 'username', name: 'username', autocomplete: 'username', required: true });
  const pass = h('input', { id: 'password', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const form = h('form', { id: 'login', class: 'card' },
    h('h1', {}, 'Lifeline — log in'),
    h('label', { for: 'username' }, 'User'), user,
    h('label', { for: 'password' }, 'Password'), pass,
    h('button', { type: 'submit', id: 'login-submit' }, 'Log in'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await api('POST', '/api/v1/login', { username: user.value, password: pass.value });
      location.assign(safeNext(params.get('next'), location.origin));
    } catch (e) {
      pass.value = '';
      if (e.status === 401) flash('Wrong user name or password.', 'error'); else fail(e);
    }
  });
  main.append(form);
  user.focus();
}
