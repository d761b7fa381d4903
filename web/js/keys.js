// Keyboard shortcuts on every page: `/` focuses the search or filter, `g o` the overview, `g f` the fleet,
// `j`/`k` move between the page's rows (links marked `data-nav`, table rows' first link), `?` lists them.
// Keys typed into a field, or with Ctrl/Alt/Meta, are the field's and the browser's.
import { h } from './lib.js';

export const KEYS = [
  ['/', 'focus the search / filter'], ['g o', 'go to the overview'], ['g f', 'go to the fleet'],
  ['j / k', 'next / previous row'], ['Enter', 'open the row'], ['?', 'this list'], ['Esc', 'close it'],
];

function targets() {
  const main = document.getElementById('main');
  const marked = [...main.querySelectorAll('[data-nav]')];
  const rowLinks = [...main.querySelectorAll('tbody tr')].map((tr) => tr.querySelector('a[href], button, input')).filter(Boolean);
  const all = [...new Set([...marked, ...rowLinks])];
  return all.sort((a, b) => (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
}

function help() {
  let d = document.getElementById('keys-help');
  if (!d) {
    d = h('dialog', { id: 'keys-help', 'aria-labelledby': 'keys-title' },
      h('h2', { id: 'keys-title' }, 'Keyboard'),
      h('table', {}, h('tbody', {}, KEYS.map(([k, what]) => h('tr', {}, h('th', { scope: 'row' }, h('kbd', {}, k)), h('td', {}, what))))),
      h('form', { method: 'dialog' }, h('button', { id: 'keys-close' }, 'Close')));
    document.body.append(d);
  }
  if (!d.open) d.showModal();
}

export function install() {
  let g = 0;
  document.addEventListener('keydown', (ev) => {
    if (ev.ctrlKey || ev.altKey || ev.metaKey) return;
    const t = ev.target;
    if (t && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
    if (document.querySelector('dialog[open]:not(#keys-help)')) return;
    const now = Date.now();
    if (g && now - g < 1500) {
      g = 0;
      if (ev.key === 'o') { ev.preventDefault(); location.assign('/ui/overview'); return; }
      if (ev.key === 'f') { ev.preventDefault(); location.assign('/ui/fleet'); return; }
    }
    if (ev.key === 'g') { g = now; return; }
    if (ev.key === '/') {
      const f = document.querySelector('#filter, input[type=search], #main input[type=text]');
      if (f) { ev.preventDefault(); f.focus(); f.select && f.select(); }
    } else if (ev.key === '?') {
      ev.preventDefault();
      help();
    } else if (ev.key === 'j' || ev.key === 'k') {
      const list = targets();
      if (!list.length) return;
      ev.preventDefault();
      const i = list.indexOf(document.activeElement);
      const next = ev.key === 'j' ? (i < 0 ? 0 : Math.min(i + 1, list.length - 1)) : (i < 0 ? list.length - 1 : Math.max(i - 1, 0));
      list[next].focus();
      list[next].scrollIntoView({ block: 'nearest' });
    }
  });
}
