// @ts-check
/**
 * Which chat a side or DevTools panel shows when it opens, so a chat survives closing the panel
 * and restarting the browser (the seeds' Node host keeps it in chrome.storage.local too).
 *
 * - `browy.panel.<prefix>.<place>` in chrome.storage.session: the chat of the panel in that
 *   window (side panel) or inspected tab (DevTools) during this browser run. Window and tab ids
 *   are new after a restart, so this cannot outlive it.
 * - `browy.panel.<prefix>.last` in chrome.storage.local: the chat a panel of that kind showed
 *   last. After a restart the first panel to open takes it (and claims it for this run, in
 *   `browy.claimed.<prefix>` in chrome.storage.session, so a second window does not show the same
 *   chat); later panels start new chats.
 */

/** @param {string} prefix */
const lastKey = (prefix) => `browy.panel.${prefix}.last`;
/** @param {string} prefix */
const claimedKey = (prefix) => `browy.claimed.${prefix}`;

/**
 * The chat id for a panel of kind `prefix` ("sp" | "dt") at `storageKey`; remembered at once.
 * @param {any} chromeApi @param {string} prefix @param {string} storageKey
 * @param {() => string} newId
 * @returns {Promise<string>}
 */
export async function panelChatId(chromeApi, prefix, storageKey, newId) {
  const here = await chromeApi.storage.session.get([storageKey, claimedKey(prefix)]).catch(() => ({}));
  let id = typeof here?.[storageKey] === 'string' ? here[storageKey] : null;
  if (id === null) {
    const claimed = Array.isArray(here?.[claimedKey(prefix)]) ? here[claimedKey(prefix)] : [];
    const saved = await chromeApi.storage.local.get(lastKey(prefix)).catch(() => ({}));
    const last = saved?.[lastKey(prefix)];
    id = typeof last === 'string' && last.startsWith(`${prefix}-`) && !claimed.includes(last) ? last : newId();
  }
  await rememberPanelChatId(chromeApi, prefix, storageKey, id);
  return id;
}

/**
 * The panel at `storageKey` now shows chat `id` (a new chat, or one picked from the list).
 * @param {any} chromeApi @param {string} prefix @param {string} storageKey @param {string} id
 */
export async function rememberPanelChatId(chromeApi, prefix, storageKey, id) {
  const got = await chromeApi.storage.session.get(claimedKey(prefix)).catch(() => ({}));
  const claimed = Array.isArray(got?.[claimedKey(prefix)]) ? got[claimedKey(prefix)] : [];
  const claims = claimed.includes(id) ? claimed : [...claimed, id].slice(-64);
  await chromeApi.storage.session.set({ [storageKey]: id, [claimedKey(prefix)]: claims }).catch(() => {});
  await chromeApi.storage.local.set({ [lastKey(prefix)]: id }).catch(() => {});
}
