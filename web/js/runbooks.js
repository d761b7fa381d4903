// Runbooks: the catalogue from `/api/v1/runbooks` when this server has that route.
import { h, optional, table, pre } from './lib.js';

export async function render(main) {
  main.append(h('h1', {}, 'Runbooks'));
  const list = await optional('/api/v1/runbooks');
  if (list === null) { main.append(h('p', { id: 'no-runbooks' }, 'This server has no runbook API (/api/v1/runbooks): runbooks are run with `lifeline runbook` on the jump host.')); return; }
  const rows = Array.isArray(list) ? list : (list.runbooks || []);
  main.append(rows.length ? table(['Name', 'Description'], rows.map((r) => [r.name || r.id || '?', r.description || r.summary || ''])) : pre(list));
}
