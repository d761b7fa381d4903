// xterm.js writes its computed styles (theme colours, cell size) into <style> elements and a cell's
// colours into `style` attributes, which a strict Content-Security-Policy (style-src 'self', no
// 'unsafe-inline') refuses — one violation report each, and the terminal drawn without them. CSSOM is not
// governed by CSP: while the console page is open, a <style> xterm asks for is an inert <lifeline-style>
// element (hidden by app.css) whose text is mirrored into a constructable stylesheet, and a `style`
// attribute is set through `style.cssText`. No <style> element and no style attribute ever reach the
// document, so the policy stays strict and the browser reports nothing.
const INERT = 'lifeline-style';

export function inertStyles() {
  const create = Document.prototype.createElement;
  Document.prototype.createElement = function createElement(tag, opts) {
    return create.call(this, String(tag).toLowerCase() === 'style' ? INERT : tag, opts);
  };
  const set = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function setAttribute(name, value) {
    if (String(name).toLowerCase() === 'style' && this.style) { this.style.cssText = String(value); return; }
    set.call(this, name, value);
  };
}

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
  const scan = () => root.querySelectorAll(INERT).forEach(sync);
  new MutationObserver(scan).observe(root, { subtree: true, childList: true, characterData: true });
  scan();
}
