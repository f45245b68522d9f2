// @ts-check
/** The side panel's keyboard shortcut (lib/commands.js and the manifest's `commands`). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { OPEN_SIDE_PANEL, commandListener, shortcutOf } from '../lib/commands.js';

const manifest = JSON.parse(readFileSync(new URL('../manifest.json', import.meta.url), 'utf8'));

function fakeChrome() {
  /** @type {any[]} */
  const opened = [];
  const chromeApi = {
    windows: { WINDOW_ID_CURRENT: -2 },
    sidePanel: {
      /** @param {any} o */
      open(o) {
        opened.push(o);
        return Promise.resolve();
      },
    },
    commands: { getAll: async () => [{ name: '_execute_action', shortcut: '' }, { name: OPEN_SIDE_PANEL, shortcut: 'Alt+Shift+Y' }] },
  };
  return { chromeApi, opened };
}

test('the manifest declares the command with a suggested key and a localized description', () => {
  const command = manifest.commands[OPEN_SIDE_PANEL];
  assert.equal(command.suggested_key.default, 'Alt+Shift+Y');
  assert.equal(command.description, '__MSG_commandOpenSidePanel__');
  assert.ok(manifest.permissions.includes('sidePanel'));
});

test('the command opens the side panel of its tab\'s window, synchronously (within the gesture)', () => {
  const { chromeApi, opened } = fakeChrome();
  commandListener(chromeApi)(OPEN_SIDE_PANEL, { windowId: 7 });
  // No await before this check: open() was called inside the listener itself.
  assert.deepEqual(opened, [{ windowId: 7 }]);
});

test('without a tab the current window is used', () => {
  const { chromeApi, opened } = fakeChrome();
  commandListener(chromeApi)(OPEN_SIDE_PANEL, undefined);
  assert.deepEqual(opened, [{ windowId: -2 }]);
});

test('other commands are left alone', () => {
  const { chromeApi, opened } = fakeChrome();
  commandListener(chromeApi)('something-else', { windowId: 7 });
  assert.deepEqual(opened, []);
});

test('a refused open is logged, not thrown', async () => {
  const { chromeApi } = fakeChrome();
  chromeApi.sidePanel.open = () => Promise.reject(new Error('sidePanel.open() may only be called in response to a user gesture.'));
  const warn = console.warn;
  /** @type {any[]} */
  const warned = [];
  console.warn = (...a) => void warned.push(a);
  try {
    commandListener(chromeApi)(OPEN_SIDE_PANEL, { windowId: 1 });
    await new Promise((r) => setTimeout(r, 0));
  } finally {
    console.warn = warn;
  }
  assert.equal(warned.length, 1);
});

test('the shortcut shown is the one Chrome has bound, or empty when unset', async () => {
  const { chromeApi } = fakeChrome();
  assert.equal(await shortcutOf(chromeApi), 'Alt+Shift+Y');
  chromeApi.commands.getAll = async () => [{ name: OPEN_SIDE_PANEL, shortcut: '' }];
  assert.equal(await shortcutOf(chromeApi), '');
  assert.equal(await shortcutOf({}), '');
});
