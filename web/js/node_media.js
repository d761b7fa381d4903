// The node page's virtual media (operators): insert an image Lifeline serves (a file of [image-server]
// images, picked by name from the server's list) or a URL the BMC fetches, optionally booting once from it,
// and eject. The served image's URL is made by the server for this BMC alone; the page never builds one.
import { h, api, confirmAction, flash, fail, enc } from './lib.js';

export function mediaBar(d) {
  const result = h('span', { id: 'media-result' });
  const pick = h('select', { id: 'media-image' }, h('option', { value: '' }, 'loading served images…'));
  const url = h('input', { id: 'media-url', type: 'url', placeholder: 'or an https:// URL the BMC fetches', size: 40 });
  const once = h('input', { id: 'media-boot-once', type: 'checkbox', checked: true });
  api('GET', '/api/v1/media/images').then((v) => {
    const opts = v.images.map((i) => h('option', { value: i.name }, `${i.name} (${Math.round(i.size / 1048576)} MiB)`));
    const none = !v.serving ? 'image server not running' : (v.images.length ? '— served image —' : 'no served images');
    pick.replaceChildren(h('option', { value: '' }, none), ...opts);
    pick.disabled = !v.serving;
  }).catch(() => { pick.replaceChildren(h('option', { value: '' }, 'no images directory')); pick.disabled = true; });
  const show = (r) => `${r.action}: ${r.confirmed ? 'read back' : `not confirmed (${r.differences.join('; ')})`}${r.image ? ` — ${r.image}` : ''}`;
  const insert = h('button', {
    id: 'media-insert',
    onclick: async () => {
      const body = pick.value ? { served_image: pick.value } : (url.value ? { url: url.value } : null);
      if (!body) { result.textContent = 'pick a served image or give a URL'; return; }
      body.boot_once = once.checked;
      const what = body.served_image ? `served image ${body.served_image}` : body.url;
      if (!(await confirmAction(`Insert into ${d.name}'s virtual CD?`, [what, `${d.name} (BMC ${d.bmc.address})`],
        `${body.boot_once ? 'The next boot is from it, once. ' : ''}Audited as you.`))) return;
      result.textContent = 'inserting…';
      try {
        const r = await api('POST', `/api/v1/devices/${enc(d.name)}/media`, body);
        result.textContent = show(r);
        flash(`${d.name}: media ${r.confirmed ? 'inserted' : 'not confirmed'}`);
      } catch (e) { result.textContent = ''; fail(e); }
    },
  }, 'Insert media');
  const eject = h('button', {
    id: 'media-eject', class: 'danger',
    onclick: async () => {
      if (!(await confirmAction(`Eject ${d.name}'s virtual media?`, [d.name], 'Audited as you.'))) return;
      try {
        const r = await api('POST', `/api/v1/devices/${enc(d.name)}/media/eject`);
        result.textContent = show(r);
        flash(`${d.name}: media ejected`);
      } catch (e) { result.textContent = ''; fail(e); }
    },
  }, 'Eject');
  return h('div', { class: 'bar', id: 'media' }, 'Virtual media: ', pick, ' ', url, ' ',
    h('label', {}, once, ' boot once'), ' ', insert, ' ', eject, ' ', result);
}
