// @ts-check
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createFakeChrome } from './fake-chrome.mjs';
import { panelChatId, rememberPanelChatId } from '../lib/panel-chat-id.js';

let n = 0;
const fresh = () => `sp-new${++n}`;

/** A browser restart: chrome.storage.session is emptied, chrome.storage.local is kept. */
function restart(/** @type {any} */ chrome) {
  for (const k of Object.keys(chrome.storage.session.data)) delete chrome.storage.session.data[k];
}

test('a reopened side panel shows the same chat, and so does the first one after a restart', async () => {
  const { chrome } = createFakeChrome();
  const first = await panelChatId(chrome, 'sp', 'browy.panel.sp.1', fresh);
  assert.equal(await panelChatId(chrome, 'sp', 'browy.panel.sp.1', fresh), first);
  assert.equal(chrome.storage.local.data['browy.panel.sp.last'], first);
  restart(chrome);
  // Window ids are new after a restart: the panel still finds its chat in chrome.storage.local.
  assert.equal(await panelChatId(chrome, 'sp', 'browy.panel.sp.7', fresh), first);
});

test('a second window after a restart starts a chat of its own', async () => {
  const { chrome } = createFakeChrome();
  const first = await panelChatId(chrome, 'sp', 'browy.panel.sp.1', fresh);
  restart(chrome);
  assert.equal(await panelChatId(chrome, 'sp', 'browy.panel.sp.5', fresh), first);
  const other = await panelChatId(chrome, 'sp', 'browy.panel.sp.6', fresh);
  assert.notEqual(other, first);
  // The chat shown last is the one the next restart brings back.
  assert.equal(chrome.storage.local.data['browy.panel.sp.last'], other);
});

test('a chat picked from the list is the one remembered', async () => {
  const { chrome } = createFakeChrome();
  await panelChatId(chrome, 'sp', 'browy.panel.sp.1', fresh);
  await rememberPanelChatId(chrome, 'sp', 'browy.panel.sp.1', 'sp-picked');
  restart(chrome);
  assert.equal(await panelChatId(chrome, 'sp', 'browy.panel.sp.2', fresh), 'sp-picked');
});

test('a DevTools panel keeps its own last chat, apart from the side panel', async () => {
  const { chrome } = createFakeChrome();
  const side = await panelChatId(chrome, 'sp', 'browy.panel.sp.1', fresh);
  const dev = await panelChatId(chrome, 'dt', 'browy.panel.dt.9', () => 'dt-x1');
  restart(chrome);
  assert.equal(await panelChatId(chrome, 'dt', 'browy.panel.dt.3', () => 'dt-x2'), dev);
  assert.equal(await panelChatId(chrome, 'sp', 'browy.panel.sp.2', fresh), side);
});
