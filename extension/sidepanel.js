// @ts-check
/** Side panel: the shared chat UI with session id `sp-…`, kept per window and, across browser restarts, in chrome.storage.local (lib/panel-chat-id.js). */

import { mountChat } from './lib/chat-ui.js';
import { localize } from './lib/i18n.js';

localize(document);

const chromeApi = /** @type {any} */ (globalThis).chrome;

async function main() {
  let windowId;
  try {
    windowId = (await chromeApi.windows.getCurrent()).id;
  } catch {
    windowId = undefined;
  }
  const root = /** @type {HTMLElement} */ (document.getElementById('app'));
  await mountChat(root, { prefix: 'sp', storageKey: `browy.panel.sp.${windowId ?? 'default'}`, windowId });
}

void main();
