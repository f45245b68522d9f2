// @ts-check
/**
 * The service worker's wiring, as a function so node tests can run it against a fake `chrome`.
 *
 *   panel port --(panel -> host types only)--> NativeConnection --> host
 *   host --> NativeConnection.onMessage --> "cdp" kinds: CdpExecutor  (answers via tool.result)
 *                                       --> "panel" kinds: SessionRegistry.route (by sessionId / broadcast)
 *   NativeConnection state --> every panel as {type: "__state", state, detail, fix}
 *   chrome.downloads --> DownloadReporter --> download.started / download.done (v2 only)
 *
 * Panel-internal messages (type "__…") never reach the host:
 *   panel -> SW  `__getState` (answered with __state), `__retry` (reconnect now)
 *   SW -> panel  `__state`, `__session_moved`, `__dropped` (a message that could not be delivered)
 *
 * session.start is recorded in the registry and sent only when the connection is ready; on every
 * transition to ready the registry re-sends all live session.starts before queued messages flow.
 */

import { CdpExecutor } from './cdp.js';
import { DownloadReporter } from './downloads.js';
import { t } from './i18n.js';
import { NativeConnection } from './native.js';
import { inboundHandler, isInternalType, isPanelToHost } from './protocol.js';
import { SessionRegistry } from './sessions.js';

/** @typedef {{type: string, [k: string]: any}} Msg */

/**
 * @typedef {object} BackgroundOptions
 * @property {any} [chromeApi]
 * @property {Partial<import('./native.js').NativeOptions>} [native]
 * @property {Partial<import('./cdp.js').CdpOptions>} [cdp]
 * @property {number} [receivedLimit]
 */

/** @param {BackgroundOptions} [opts] */
export function createBackground(opts = {}) {
  const chromeApi = opts.chromeApi ?? /** @type {any} */ (globalThis).chrome;
  const receivedLimit = opts.receivedLimit ?? 500;
  /** @type {WeakMap<object, Promise<void>>} */
  const chains = new WeakMap();
  /** @type {Msg[]} the last host messages, for the test hook */
  const received = [];

  const registry = new SessionRegistry({
    chromeApi,
    onSessionEnded: (sessionId) => {
      // The panel closed: end its session on the host. Only meaningful on a ready connection —
      // a new connection has no registration to end.
      if (conn.ready) conn.send({ type: 'session.end', sessionId });
    },
    onPanelConnected: (entry) => entry.port.postMessage({ type: '__state', ...conn.info() }),
    // One chain per panel keeps its messages in order (session.start awaits its windowId; the
    // chat.send right behind it must not overtake it).
    onPanelMessage: (entry, msg) => {
      const prev = chains.get(entry) ?? Promise.resolve();
      const next = prev.then(() => handlePanelMessage(entry, msg)).catch((e) => console.error('[browy] panel message failed', e));
      chains.set(entry, next);
    },
  });

  const conn = new NativeConnection({
    chromeApi,
    ...opts.native,
    onMessage: (msg) => handleHostMessage(msg),
    onDrop: (msg, reason) => handleDrop(msg, reason),
  });

  const cdp = new CdpExecutor({
    chromeApi,
    ...opts.cdp,
    send: (msg) => void conn.send(msg),
  });

  // Downloads the browser makes, told to a v2 host that offers `downloads` (lib/downloads.js).
  const downloads = new DownloadReporter({ chromeApi, conn });

  conn.addStateListener((info) => {
    if (info.state === 'ready') {
      for (const start of registry.startMessages()) conn.send(start);
    } else if (info.state !== 'connecting' && info.state !== 'awaiting_hello') {
      void cdp.connectionLost();
      endOpenTurns();
    }
    registry.broadcast({ type: '__state', ...info });
  });

  /** Turn ids whose end the panels already got (bounded; oldest forgotten first). */
  const endedTurns = new Set();
  /** sessionId -> the turnId of its chat.send that has not ended yet. */
  const openTurns = new Map();
  /** Sessions whose next status event belongs to a dropped second end. */
  const skipStatus = new Set();

  /**
   * Exactly one end per chat.send (protocol.md 3b): after a crash the relay or a new daemon
   * may end a turn the panel already saw end; v2 ends carry the turnId, so a second one (and
   * the status event after it) is dropped here.
   * @param {Msg} msg @returns {boolean} true when the message must not reach the panel
   */
  function isSecondEnd(msg) {
    if ((msg.type === 'chat.done' || msg.type === 'chat.error') && typeof msg.turnId === 'string') {
      if (endedTurns.has(msg.turnId)) {
        skipStatus.add(msg.sessionId);
        return true;
      }
      endedTurns.add(msg.turnId);
      if (endedTurns.size > 1000) endedTurns.delete(endedTurns.values().next().value);
      if (openTurns.get(msg.sessionId) === msg.turnId) openTurns.delete(msg.sessionId);
      return false;
    }
    if (msg.type === 'event.activity' && skipStatus.has(msg.sessionId) &&
        (msg.event === 'status.idle' || msg.event === 'status.error')) {
      skipStatus.delete(msg.sessionId);
      return true;
    }
    return false;
  }

  /** @param {Msg} msg */
  function handleHostMessage(msg) {
    received.push(msg);
    if (received.length > receivedLimit) received.splice(0, received.length - receivedLimit);
    if (isSecondEnd(msg)) return;
    const kind = inboundHandler(msg.type);
    if (kind === 'cdp') {
      void cdp.handle(msg);
    } else if (kind === 'panel' || kind === 'native') {
      // "native" kinds that reach here: error{} other than PROTOCOL_MISMATCH/ORIGIN_FORBIDDEN.
      registry.route(msg);
    } else {
      console.warn('[browy] unknown host message type ignored:', msg.type);
    }
  }

  /**
   * A message could not reach the host. A chat.send must still end (3b: every turn ends), so its
   * panel gets a local chat.error + status.error; other panel messages get a `__dropped` notice.
   * @param {Msg} msg @param {string} reason
   */
  function handleDrop(msg, reason) {
    if (typeof msg.sessionId !== 'string' || !registry.has(msg.sessionId)) return;
    if (msg.type === 'chat.send') {
      const info = conn.info();
      registry.route({
        type: 'chat.error',
        sessionId: msg.sessionId,
        code: 'CONNECTION_LOST',
        message: t('errorNotConnected', info.state, info.fix).trim(),
        turnId: msg.turnId,
      });
      if (typeof msg.turnId === 'string') endedTurns.add(msg.turnId);
      registry.route({ type: 'event.activity', sessionId: msg.sessionId, event: 'status.error' });
    } else if (msg.type !== 'session.end' && msg.type !== 'session.start') {
      registry.route({ type: '__dropped', sessionId: msg.sessionId, dropped: msg.type, reason });
    }
  }

  /**
   * @param {import('./sessions.js').PanelEntry} entry
   * @param {Msg} msg
   */
  async function handlePanelMessage(entry, msg) {
    if (isInternalType(msg.type)) {
      if (msg.type === '__getState') entry.port.postMessage({ type: '__state', ...conn.info() });
      else if (msg.type === '__retry') conn.retryNow();
      return;
    }
    if (!isPanelToHost(msg)) {
      console.warn('[browy] panel message refused:', msg.type);
      return;
    }
    if (msg.type === 'session.start') {
      if (typeof msg.sessionId !== 'string' || !msg.sessionId) return;
      const start = { ...msg, windowId: await windowIdFor(msg, entry) };
      if (start.windowId === undefined) delete start.windowId;
      registry.register(entry, start);
      if (conn.ready) conn.send(start); // else: sent by the state listener on ready
      return;
    }
    if (msg.type === 'session.end' && typeof msg.sessionId === 'string') {
      registry.unregister(entry, msg.sessionId);
      if (conn.ready) conn.send(msg);
      return;
    }
    if (msg.type === 'chat.send' && typeof msg.sessionId === 'string' && typeof msg.turnId === 'string') {
      openTurns.set(msg.sessionId, msg.turnId);
    }
    conn.send(msg);
  }

  /**
   * The native port dropped: a chat.send it carried may never have reached any daemon (it died
   * in the relay's pipe), so nothing would end it. Each open turn ends here; if the host did
   * get it, its own end arrives later with the same turnId and is dropped (isSecondEnd).
   */
  function endOpenTurns() {
    for (const [sessionId, turnId] of openTurns) {
      if (endedTurns.has(turnId)) continue;
      endedTurns.add(turnId);
      registry.route({
        type: 'chat.error', sessionId, turnId, code: 'CONNECTION_LOST',
        message: t('errorConnectionLost'),
      });
      registry.route({ type: 'event.activity', sessionId, event: 'status.error' });
    }
    openTurns.clear();
  }

  /**
   * The panel's window (v2 session.start adds windowId): the panel's own word, else the inspected
   * tab's window (DevTools), else the sender tab's, else the last focused window.
   * @param {Msg} msg
   * @param {import('./sessions.js').PanelEntry} entry
   * @returns {Promise<number | undefined>}
   */
  async function windowIdFor(msg, entry) {
    if (typeof msg.windowId === 'number') return msg.windowId;
    try {
      if (typeof msg.inspectedTabId === 'number') return (await chromeApi.tabs.get(msg.inspectedTabId)).windowId;
      const senderWindow = entry.port.sender?.tab?.windowId;
      if (typeof senderWindow === 'number') return senderWindow;
      const w = await chromeApi.windows?.getLastFocused?.();
      return typeof w?.id === 'number' ? w.id : undefined;
    } catch {
      return undefined;
    }
  }

  /** Start listening and connecting. */
  function start() {
    chromeApi.runtime.onConnect.addListener((/** @type {any} */ port) => registry.attach(port));
    cdp.start();
    downloads.start();
    void registry.restore();
    void cdp.restore();
    void conn.connect();
  }

  /** Small, harmless hook for end-to-end tests (Playwright's worker.evaluate). */
  const testHook = {
    get state() {
      return conn.info();
    },
    /** @param {Msg} msg */
    send: (msg) => conn.send(msg),
    received,
    sessions: () => registry.sessionIds(),
    retry: () => conn.retryNow(),
    /**
     * Reconnect saying hello with protocol `n` (1: as the v1 service worker does), so a test
     * can drive the host's v1 path with this extension. Until the worker restarts.
     * @param {number} n
     */
    useProtocol: (n) => {
      conn.protocol = n;
      conn.dropPort();
      conn.fail('host_crashed', `reconnecting with protocol ${n}`);
      conn.retryNow();
    },
  };

  return { conn, cdp, registry, downloads, start, testHook, handleHostMessage, handlePanelMessage };
}
