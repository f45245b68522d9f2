// @ts-check
/**
 * The extension's strings live in one table per language: `_locales/<lang>/messages.json`
 * (Chrome's format: https://developer.chrome.com/docs/extensions/reference/api/i18n). A
 * translation is one more such file; English is the default locale (manifest `default_locale`).
 *
 *   t(key, ...substitutions)  chrome.i18n.getMessage in pages and the service worker; where there
 *                             is no chrome.i18n (node tests) the table given to useMessages().
 *   localize(root)            fills `data-i18n` (text), `data-i18n-title`, `data-i18n-placeholder`
 *                             and `data-i18n-aria-label` attributes of static HTML.
 *
 * Keys are always string literals at the call site (`t('sendButton')`, never a computed name), so
 * a node test can check that every key used exists in `_locales/en/messages.json` and none is
 * left unused. A missing key shows as the key itself, which that test keeps from shipping.
 */

/** @typedef {{message: string, description?: string, placeholders?: Record<string, {content: string, example?: string}>}} MessageEntry */
/** @typedef {Record<string, MessageEntry>} MessageTable */

/** @type {Map<string, MessageEntry> | null} lower-cased keys, as Chrome treats them */
let fallback = null;

/**
 * Use `table` (a parsed messages.json) where chrome.i18n is not available (node tests).
 * @param {MessageTable | null} table
 */
export function useMessages(table) {
  fallback = table ? new Map(Object.entries(table).map(([k, v]) => [k.toLowerCase(), v])) : null;
}

/**
 * Chrome's substitution rules, for the fallback table: `$NAME$` is replaced by its placeholder's
 * content (names are case-insensitive), then `$1`…`$9` in the result by the substitutions, and
 * `$$` by `$`. Inserted substitutions are not scanned again.
 * @param {MessageEntry} entry
 * @param {string[]} subs
 * @returns {string}
 */
export function formatMessage(entry, subs) {
  /** @type {Record<string, string>} */
  const placeholders = {};
  for (const [name, p] of Object.entries(entry.placeholders ?? {})) placeholders[name.toLowerCase()] = p.content;
  const withPlaceholders = entry.message.replace(/\$([A-Za-z0-9_@]+)\$/g, (whole, name) => placeholders[name.toLowerCase()] ?? whole);
  return withPlaceholders.replace(/\$(\$|[1-9])/g, (_, c) => (c === '$' ? '$' : subs[Number(c) - 1] ?? ''));
}

/**
 * The message `key` with its substitutions.
 * @param {string} key
 * @param {...(string | number)} substitutions
 * @returns {string}
 */
export function t(key, ...substitutions) {
  const subs = substitutions.map(String);
  const api = /** @type {any} */ (globalThis).chrome?.i18n;
  if (typeof api?.getMessage === 'function') {
    const text = api.getMessage(key, subs);
    if (text) return text;
  }
  const entry = fallback?.get(key.toLowerCase());
  return entry ? formatMessage(entry, subs) : key;
}

/** @type {[string, (el: Element, text: string) => void][]} */
const BINDINGS = [
  ['data-i18n', (el, text) => void (el.textContent = text)],
  ['data-i18n-title', (el, text) => el.setAttribute('title', text)],
  ['data-i18n-placeholder', (el, text) => el.setAttribute('placeholder', text)],
  ['data-i18n-aria-label', (el, text) => el.setAttribute('aria-label', text)],
];

/**
 * Put the messages named by `data-i18n…` attributes into `root` (a document or an element).
 * @param {ParentNode} root
 */
export function localize(root) {
  for (const [attr, apply] of BINDINGS) {
    for (const el of root.querySelectorAll(`[${attr}]`)) apply(el, t(/** @type {string} */ (el.getAttribute(attr))));
  }
}
