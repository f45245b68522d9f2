// @ts-check
/**
 * Small DOM helpers shared by the panels and the options page. The UI is built with
 * createElement/textContent; innerHTML only ever takes sanitized markdown (rich-text.js).
 */

/**
 * Create a DOM element. `text` sets textContent, `on…` functions become listeners, `false`,
 * `null` and `undefined` attributes are left out, `true` sets an empty attribute.
 * @param {string} tag
 * @param {Record<string, any>} [attrs]
 * @param {...(Node | string | null | undefined | false)} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = String(v);
    else if (k === 'text') el.textContent = String(v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c) el.append(c);
  return el;
}

/**
 * A value as one short line of text (JSON for objects), cut at `max` characters.
 * @param {unknown} v
 */
export function brief(v, max = 300) {
  let s;
  try {
    s = typeof v === 'string' ? v : JSON.stringify(v);
  } catch {
    s = String(v);
  }
  s = s ?? '';
  return s.length > max ? s.slice(0, max) + '…' : s;
}
