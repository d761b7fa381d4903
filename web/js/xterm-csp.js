// xterm.js writes its computed styles (theme colours, cell size) into <style> elements, which a strict
// Content-Security-Policy (style-src 'self', no 'unsafe-inline') refuses to apply. Constructable
// stylesheets are CSSOM, which CSP does not govern: mirror each <style> under the terminal into an
// adopted sheet and keep it in sync, so the policy stays strict and the terminal still looks right.
export function mirrorStyles(root) {
  const sheets = new Map();
  const sync = (el) => {
    let s = sheets.get(el);
    if (!s) {
      s = new CSSStyleSheet();
      sheets.set(el, s);
      document.adoptedStyleSheets = [...document.adoptedStyleSheets, s];
    }
    s.replaceSync(el.textContent);
  };
  const scan = () => root.querySelectorAll('style').forEach(sync);
  new MutationObserver(scan).observe(root, { subtree: true, childList: true, characterData: true });
  scan();
}
