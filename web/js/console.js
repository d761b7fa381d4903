// The SOL console in the browser: xterm.js on the server's WebSocket attach. Read-only by default; an
// operator takes over the write lock (audited by the server), can send a serial break, and anyone can
// scroll back through the always-on log or download it.
import { Terminal } from './xterm.mjs';
import { inertStyles, mirrorStyles } from './xterm-csp.js';
import { h, api, can, confirmAction, download, fail, flash, enc } from './lib.js';

export async function render(main, { name }) {
  const status = h('span', { id: 'console-status' }, 'connecting…');
  const holder = h('div', { id: 'term', class: 'term' });
  const bar = h('div', { class: 'bar' }, status, ' ');
  // xterm's own stylesheet (its helper textarea and measuring element are otherwise drawn as stray text).
  document.head.append(h('link', { rel: 'stylesheet', href: '/assets/xterm.css' }));
  main.append(h('h1', {}, `Console ${name}`), bar, holder);
  inertStyles();
  mirrorStyles(holder);
  // As many rows as fit under the bar on this screen (the prompt stays above the fold at 1280x800).
  const rows = Math.max(10, Math.min(48, Math.floor((window.innerHeight - holder.getBoundingClientRect().top - 24) / 17)));
  const term = new Terminal({ cols: 120, rows, scrollback: 10000, convertEol: false, disableStdin: false });
  term.open(holder);
  // The screen's text for tests and screen readers' tooling (the DOM shows only the visible rows).
  holder.dataset.ready = 'yes';
  window.lifelineConsoleText = () => {
    const b = term.buffer.active;
    const out = [];
    for (let i = 0; i < b.length; i += 1) out.push(b.getLine(i).translateToString(true));
    return out.join('\n');
  };
  // Lifeline's own lines (the live separator, markers such as "ann is writing") go on lines of their own;
  // the host's unfinished line (typically the prompt the user is about to type at) is then drawn again, so
  // the echo of what is typed lands after its prompt rather than on a line that seems to come from nowhere.
  // Not replayed when it holds escape sequences (a full-screen program: its cursor moves are not ours to redo).
  let partial = '';
  const dec = new TextDecoder();
  const host = (data) => {
    const s = typeof data === 'string' ? data : dec.decode(data, { stream: true });
    const nl = s.lastIndexOf('\n');
    partial = nl >= 0 ? s.slice(nl + 1) : partial + s;
    const cr = partial.lastIndexOf('\r');
    if (cr >= 0) partial = partial.slice(cr + 1);
    if (partial.length > 512) partial = ''; // a long unterminated line is not a prompt worth redrawing
    term.write(data, () => term.scrollToBottom());
  };
  const note = (text) => {
    const again = partial.includes('\x1b') ? '' : partial;
    term.write(`${partial ? '\r\n' : ''}${text}\r\n${again}`);
  };
  // Scrollback: what the always-on logger recorded before this page opened.
  try {
    const log = await api('GET', `/api/v1/consoles/${enc(name)}/log?limit=2000`);
    if (log.text) host(log.text.replace(/\r?\n/g, '\r\n'));
    note('\x1b[2m--- live ---\x1b[0m');
  } catch (e) { fail(e); }
  let ws = null;
  let writing = false;
  const enc8 = new TextEncoder();
  const connect = (mode) => {
    if (ws) { ws.onclose = null; ws.close(); }
    const proto = location.protocol === 'https:' ? 'wss' : 'ws';
    const path = mode === 'read' ? 'attach' : `write${mode === 'take-over' ? '?take_over=true' : ''}`;
    ws = new WebSocket(`${proto}://${location.host}/api/v1/consoles/${enc(name)}/${path}`);
    ws.binaryType = 'arraybuffer';
    writing = mode !== 'read';
    ws.onopen = () => { status.textContent = writing ? 'attached: you hold the write lock' : 'attached read-only'; document.body.dataset.console = writing ? 'write' : 'read-only'; };
    ws.onmessage = (ev) => {
      if (typeof ev.data !== 'string') { host(new Uint8Array(ev.data)); return; }
      const m = JSON.parse(ev.data);
      if (m.type === 'writer') status.textContent = m.writer ? `writer: ${m.writer}` : 'no writer';
      else if (m.type === 'lagged') status.textContent = `lagging: ${m.missed} bytes missed`;
      else if (m.type === 'marker') note(`\x1b[33m[${m.text}]\x1b[0m`);
      else if (m.type === 'status') status.textContent = `console: ${typeof m.status === 'string' ? m.status : JSON.stringify(m.status)}`;
      else if (m.type === 'closed') status.textContent = 'console closed';
    };
    ws.onclose = () => { status.textContent = 'disconnected'; document.body.dataset.console = 'closed'; };
  };
  term.onData((d) => { if (writing && ws && ws.readyState === WebSocket.OPEN) ws.send(enc8.encode(d)); });
  if (can('operator')) {
    bar.append(
      h('button', { id: 'take-over', class: 'danger', onclick: async () => {
        if (!(await confirmAction(`Take over the console of ${name}?`, [name], 'Whoever writes now becomes read-only; the take-over is audited as you.'))) return;
        connect('take-over');
        term.focus();
      } }, 'Take over'), ' ',
      h('button', { id: 'read-only', onclick: () => connect('read') }, 'Back to read-only'), ' ',
      h('button', { id: 'send-break', onclick: () => {
        if (!writing || !ws) { flash('Take over first: a break needs the write lock.', 'error'); return; }
        ws.send('{"type":"break"}');
        flash('Break sent.');
      } }, 'Send break'), ' ');
  }
  bar.append(h('button', { id: 'download-log', onclick: async () => {
    try {
      const log = await api('GET', `/api/v1/consoles/${enc(name)}/log?limit=100000`);
      download(`${name}-console.log`, log.text);
    } catch (e) { fail(e); }
  } }, 'Download log'), ' ', h('a', { href: `/ui/node/${enc(name)}` }, `Node ${name}`));
  connect('read');
}
