// @ts-check
/**
 * The keyboard shortcut that opens the side panel (manifest `commands`).
 *
 * A named command rather than `_execute_action`, so chrome://extensions/shortcuts shows what it
 * does. Its listener calls chrome.sidePanel.open() at once: open() works only in response to a
 * user gesture, a command counts as one, and the gesture is gone after an `await`
 * (https://developer.chrome.com/docs/extensions/reference/api/sidePanel#user-interaction).
 * The window comes with the event (`tab`, Chrome 86+), so nothing needs looking up first.
 */

export const OPEN_SIDE_PANEL = 'open-side-panel';

/**
 * The chrome.commands.onCommand listener.
 * @param {any} chromeApi
 * @returns {(command: string, tab?: {windowId?: number}) => void}
 */
export function commandListener(chromeApi) {
  return (command, tab) => {
    if (command !== OPEN_SIDE_PANEL) return;
    // No tab: the command fired with no tab focused; the current window is the best guess.
    const windowId = typeof tab?.windowId === 'number' ? tab.windowId : chromeApi.windows?.WINDOW_ID_CURRENT ?? -2;
    Promise.resolve(chromeApi.sidePanel.open({ windowId })).catch((/** @type {unknown} */ e) => console.warn('[browy] sidePanel.open failed', e));
  };
}

/**
 * The key bound to a command, as Chrome reports it ('' when the user or a clash left it unset).
 * @param {any} chromeApi
 * @param {string} [name]
 * @returns {Promise<string>}
 */
export async function shortcutOf(chromeApi, name = OPEN_SIDE_PANEL) {
  const all = /** @type {{name?: string, shortcut?: string}[]} */ ((await chromeApi.commands?.getAll?.()) ?? []);
  return all.find((c) => c.name === name)?.shortcut ?? '';
}
