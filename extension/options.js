// @ts-check
/**
 * Options page: v2 `config.get` -> `config.result{values, schema}` rendered generically,
 * `config.set{values}` on save, `doctor.run` -> `doctor.result{checks}`, `daemon.restart` (the
 * "host stuck" button), the host status, and the
 * side panel's keyboard shortcut as Chrome has it bound (chrome.commands.getAll).
 * Talks to the service worker like a panel: a runtime port and a session `opts-…` without capabilities.
 *
 * The schema is JSON-schema-ish: either {type: "object", properties: {...}} or a plain map of
 * field name -> {type, enum?, title?, description?, default?, items?, properties?}. Nested objects
 * become dotted keys ("approvals.mode"), which is also how values are sent back.
 */

import { h } from './lib/dom.js';
import { shortcutOf } from './lib/commands.js';
import { localize, t } from './lib/i18n.js';
import { PanelPort, shortId } from './lib/panel-port.js';

localize(document);

/** @typedef {{type?: string, enum?: any[], title?: string, description?: string, default?: any, items?: any, properties?: Record<string, any>, format?: string, writeOnly?: boolean}} Field */

const sessionId = `opts-${shortId()}`;
const statusEl = /** @type {HTMLElement} */ (document.getElementById('status'));
const form = /** @type {HTMLFormElement} */ (document.getElementById('config'));
const configMsg = /** @type {HTMLElement} */ (document.getElementById('config-msg'));
const doctorList = /** @type {HTMLElement} */ (document.getElementById('doctor'));
const doctorButton = /** @type {HTMLButtonElement} */ (document.getElementById('doctor-run'));
const restartButton = /** @type {HTMLButtonElement} */ (document.getElementById('daemon-restart'));
const restartMsg = /** @type {HTMLElement} */ (document.getElementById('restart-msg'));
const shortcutEl = /** @type {HTMLElement} */ (document.getElementById('shortcut'));
const shortcutButton = /** @type {HTMLButtonElement} */ (document.getElementById('shortcut-change'));
const chromeApi = /** @type {any} */ (globalThis).chrome;

/** @type {Map<string, {field: Field, read: () => any}>} */
let inputs = new Map();

const port = new PanelPort({
  onMessage: (m) => handle(m),
  onConnect: () => {
    port.send({ type: 'session.start', sessionId, capabilities: [] });
    port.send({ type: 'config.get', sessionId });
  },
});

/** @param {any} values @param {string} key */
function valueAt(values, key) {
  if (values && key in values) return values[key];
  let cur = values;
  for (const part of key.split('.')) {
    if (cur == null || typeof cur !== 'object') return undefined;
    cur = cur[part];
  }
  return cur;
}

/** @param {any} schema @returns {Record<string, Field>} */
function propertiesOf(schema) {
  if (schema && typeof schema === 'object' && schema.properties && typeof schema.properties === 'object') return schema.properties;
  return schema && typeof schema === 'object' ? schema : {};
}

/**
 * @param {string} key @param {Field} field @param {any} value
 * @returns {{el: HTMLElement, read: () => any}}
 */
function renderField(key, field, value) {
  const label = field.title ?? key;
  const id = `f-${key.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
  const v = value === undefined ? field.default : value;
  const help = field.description ? h('small', { class: 'muted', text: field.description }) : null;
  if (field.type === 'boolean') {
    const box = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox', id }));
    box.checked = !!v;
    return { el: h('div', { class: 'field check' }, box, h('label', { for: id, text: label }), help), read: () => box.checked };
  }
  if (Array.isArray(field.enum)) {
    const sel = /** @type {HTMLSelectElement} */ (h('select', { id }, ...field.enum.map((o) => h('option', { value: String(o), text: String(o) }))));
    if (v !== undefined) sel.value = String(v);
    return { el: h('div', { class: 'field' }, h('label', { for: id, text: label }), sel, help), read: () => field.enum?.find((o) => String(o) === sel.value) };
  }
  if (field.type === 'array' && Array.isArray(field.items?.enum)) {
    // A set of toggles, e.g. the enabled tools.
    const chosen = new Set(Array.isArray(v) ? v : []);
    /** @type {HTMLInputElement[]} */
    const boxes = [];
    const group = h('fieldset', { class: 'field toggles' }, h('legend', { text: label }), help);
    /** @type {Record<string, string>} what each choice does, when the host says (host tools) */
    const says = field.items.descriptions ?? {};
    for (const o of field.items.enum) {
      const box = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox', value: String(o) }));
      box.checked = chosen.has(o);
      boxes.push(box);
      const what = says[String(o)];
      group.append(h('label', { class: what ? 'toggle described' : 'toggle' }, box, String(o), what ? h('small', { class: 'muted', text: ` — ${what}` }) : null));
    }
    return { el: group, read: () => boxes.filter((b) => b.checked).map((b) => b.value) };
  }
  if (field.type === 'array') {
    const area = /** @type {HTMLTextAreaElement} */ (h('textarea', { id, rows: 3 }));
    area.value = Array.isArray(v) ? v.join('\n') : '';
    return {
      el: h('div', { class: 'field' }, h('label', { for: id, text: t('optionsOnePerLine', label) }), area, help),
      read: () => area.value.split('\n').map((s) => s.trim()).filter(Boolean),
    };
  }
  const numeric = field.type === 'number' || field.type === 'integer';
  const secret = field.format === 'password' || field.writeOnly || /key|secret|token|password/i.test(key);
  const inp = /** @type {HTMLInputElement} */ (h('input', { id, type: numeric ? 'number' : secret ? 'password' : 'text', autocomplete: 'off' }));
  if (field.type === 'integer') inp.step = '1';
  inp.value = v === undefined || v === null ? '' : String(v);
  return {
    el: h('div', { class: 'field' }, h('label', { for: id, text: label }), inp, help),
    read: () => (numeric ? (inp.value === '' ? null : Number(inp.value)) : inp.value),
  };
}

/**
 * @param {HTMLElement} container @param {Record<string, Field>} props @param {any} values @param {string} prefix
 */
function renderProps(container, props, values, prefix) {
  for (const [name, field] of Object.entries(props)) {
    const key = prefix ? `${prefix}.${name}` : name;
    if (field && field.type === 'object' && field.properties) {
      const set = h('fieldset', { class: 'group' }, h('legend', { text: field.title ?? name }));
      renderProps(set, field.properties, values, key);
      container.append(set);
      continue;
    }
    const { el, read } = renderField(key, field ?? {}, valueAt(values, key));
    inputs.set(key, { field: field ?? {}, read });
    container.append(el);
  }
}

/** @param {any} values @param {any} schema */
function renderConfig(values, schema) {
  inputs = new Map();
  form.replaceChildren();
  renderProps(form, propertiesOf(schema), values ?? {}, '');
  if (!inputs.size) form.append(h('p', { class: 'muted', text: t('optionsNoSettings') }));
  form.append(h('button', { type: 'submit', class: 'primary', text: t('optionsSave') }));
}

form.addEventListener('submit', (e) => {
  e.preventDefault();
  /** @type {Record<string, any>} */
  const values = {};
  for (const [key, { read }] of inputs) values[key] = read();
  configMsg.textContent = t('optionsSaving');
  configMsg.dataset.saving = 'true';
  port.send({ type: 'config.set', sessionId, values });
});

doctorButton.addEventListener('click', () => {
  doctorList.replaceChildren(h('li', { class: 'muted', text: t('optionsDoctorRunning') }));
  port.send({ type: 'doctor.run', sessionId });
});

// v2 `daemon.restart`: the daemon exits and the relay starts the next one. While the relay has
// no daemon it answers requests with error{CONNECTION_LOST}; a config.result after such an
// answer comes from the next daemon: the host is back.
/** @type {{seenDown: boolean, timer: any, deadline: number} | null} */
let restarting = null;

function pollRestart() {
  if (!restarting) return;
  if (Date.now() > restarting.deadline) {
    finishRestart(t('optionsRestartFailed'));
    return;
  }
  port.send({ type: 'config.get', sessionId });
  restarting.timer = setTimeout(pollRestart, 300);
}

/** @param {string} text */
function finishRestart(text) {
  if (restarting) clearTimeout(restarting.timer);
  restarting = null;
  restartMsg.textContent = text;
  restartButton.disabled = false;
}

restartButton.addEventListener('click', () => {
  restartButton.disabled = true;
  restartMsg.textContent = t('optionsRestarting');
  restarting = { seenDown: false, timer: null, deadline: Date.now() + 60_000 };
  port.send({ type: 'daemon.restart', sessionId });
  restarting.timer = setTimeout(pollRestart, 300);
});

/** @param {any} m */
function handle(m) {
  if (typeof m.sessionId === 'string' && m.sessionId !== sessionId) return;
  switch (m.type) {
    case '__state':
      statusEl.replaceChildren(
        h('div', { text: m.state === 'ready' ? t('optionsConnected', m.detail ?? '') : `${m.state}: ${m.detail || ''}` }),
        // replaceChildren would turn a null into the text "null": add the fix only when there is one.
        ...(m.fix ? [h('code', { class: 'fix', text: m.fix })] : []),
      );
      statusEl.className = `banner state-${m.state}`;
      if (m.state === 'ready' && !inputs.size) port.send({ type: 'config.get', sessionId });
      return;
    case 'config.result':
      if (restarting) {
        if (restarting.seenDown) finishRestart(t('optionsRestarted'));
        return; // the old daemon's answer, or the next one's: the form is not redrawn meanwhile
      }
      renderConfig(m.values, m.schema);
      configMsg.textContent = configMsg.dataset.saving ? t('optionsSaved') : '';
      delete configMsg.dataset.saving;
      return;
    case 'doctor.result':
      doctorList.replaceChildren(
        ...(m.checks ?? []).map((/** @type {any} */ c) =>
          h('li', { class: c.ok ? 'ok' : 'error' }, h('strong', { text: `${c.ok ? '✓' : '✗'} ${c.name}` }), h('span', { text: ` ${c.detail ?? ''}` }), c.fix ? h('code', { class: 'fix', text: c.fix }) : null),
        ),
      );
      return;
    case 'error':
      if (restarting && m.code === 'CONNECTION_LOST') {
        restarting.seenDown = true;
        return;
      }
      delete configMsg.dataset.saving;
      configMsg.textContent = `${m.code}: ${m.message ?? ''}`;
      return;
    default:
      return;
  }
}

/** Show the side panel's shortcut as Chrome has it bound (the user may have changed it). */
async function showShortcut() {
  const keys = await shortcutOf(chromeApi).catch(() => '');
  shortcutEl.textContent = keys ? t('optionsShortcutIs', keys) : t('optionsShortcutUnset');
  shortcutEl.dataset.keys = keys;
}

// Chrome's own page is where shortcuts are changed; an extension may open it in a tab.
shortcutButton.addEventListener('click', () => void chromeApi.tabs.create({ url: 'chrome://extensions/shortcuts' }));
// Coming back from that page: show the new binding.
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') void showShortcut();
});

void showShortcut();
port.connect();
