// @ts-check
/**
 * Browy service worker entry. The only module with top-level side effects: it wires the native
 * connection, the CDP executor and the panel registry (lib/background.js) and registers Chrome
 * listeners synchronously, as MV3 requires for a worker that may be woken by an event.
 */

import { createBackground } from './lib/background.js';
import { commandListener } from './lib/commands.js';

const chromeApi = /** @type {any} */ (globalThis).chrome;
const bg = createBackground({ chromeApi });
bg.start();

// Clicking the toolbar action opens the side panel (Chrome 116+).
chromeApi.sidePanel?.setPanelBehavior?.({ openPanelOnActionClick: true })?.catch?.((/** @type {unknown} */ e) =>
  console.warn('[browy] setPanelBehavior failed', e),
);

// The keyboard shortcut (manifest `commands`) opens the side panel; registered at top level so a
// stopped worker woken by the command gets the event.
chromeApi.commands?.onCommand?.addListener(commandListener(chromeApi));

// A watchdog alarm wakes a stopped worker (e.g. after the host was missing and the worker idled
// out) so it reconnects; while the worker runs it only nudges a connection waiting on its backoff.
chromeApi.alarms?.create?.('browy-watchdog', { periodInMinutes: 1 });
chromeApi.alarms?.onAlarm?.addListener?.((/** @type {{name: string}} */ alarm) => {
  if (alarm.name === 'browy-watchdog' && bg.conn.state === 'host_crashed') bg.conn.retryNow();
});

// End-to-end tests read state and talk to the host through this (worker.evaluate). Harmless: it
// is reachable only from the worker's own context.
/** @type {any} */ (globalThis).browyTest = bg.testHook;
