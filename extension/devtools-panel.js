// @ts-check
/**
 * DevTools panel: the shared chat UI with session id `dt-…` and the inspected tab.
 * Opened as a normal tab (tests), chrome.devtools is absent: `?inspectedTabId=N` stands in for it.
 */

import { mountChat } from './lib/chat-ui.js';
import { localize } from './lib/i18n.js';

localize(document);

const chromeApi = /** @type {any} */ (globalThis).chrome;

/** @returns {number | undefined} */
function inspectedTabId() {
  const fromDevtools = chromeApi.devtools?.inspectedWindow?.tabId;
  if (typeof fromDevtools === 'number') return fromDevtools;
  const q = new URLSearchParams(location.search).get('inspectedTabId');
  const n = q === null ? NaN : Number(q);
  return Number.isInteger(n) ? n : undefined;
}

const tabId = inspectedTabId();
const root = /** @type {HTMLElement} */ (document.getElementById('app'));
void mountChat(root, { prefix: 'dt', storageKey: `browy.panel.dt.${tabId ?? 'none'}`, inspectedTabId: tabId });
