// @ts-check
/**
 * SessionRegistry: the panels connected to the service worker and the sessions each registered.
 *
 * One chrome.runtime port (name "panel") per panel page: side panel (`sp-…`), DevTools panel
 * (`dt-…`), options page (`opts-…`). A panel registers a session by sending `session.start`; the
 * registry keeps the last `session.start` of each live session so it can be re-sent when the native
 * connection becomes ready again (`startMessages()`).
 *
 * Routing host -> panel (protocol.md 3b): a message naming a session registered here goes to that
 * panel; everything else (no sessionId, or a session we do not know) is broadcast.
 *
 * A session id registered again from another port moves to that port (last writer wins).
 * When a panel's port closes, its sessions are removed and `onSessionEnded(sessionId)` lets the
 * caller send `session.end` to the host.
 *
 * The registry (session id -> its session.start) is mirrored in chrome.storage.session. After a
 * service-worker restart the panels reconnect and re-send `session.start`; `restore()` loads the old
 * registry as "orphans" for a grace period, then forgets the ones nobody reclaimed.
 */

/** @typedef {{type: string, [k: string]: any}} Msg */
/** @typedef {{postMessage: (m: any) => void, onMessage: any, onDisconnect: any, name?: string, sender?: any}} RuntimePort */
/** @typedef {{id: number, port: RuntimePort, sessions: Map<string, Msg>}} PanelEntry */

export const PANEL_PORT_NAME = 'panel';
const STORAGE_KEY = 'browy.sessions';

/**
 * @typedef {object} RegistryOptions
 * @property {any} [chromeApi]
 * @property {(sessionId: string) => void} [onSessionEnded]
 * @property {(entry: PanelEntry, msg: Msg) => void} [onPanelMessage]
 * @property {(entry: PanelEntry) => void} [onPanelConnected]
 */

export class SessionRegistry {
  /** @param {RegistryOptions} [opts] */
  constructor(opts = {}) {
    this.chrome = opts.chromeApi ?? /** @type {any} */ (globalThis).chrome;
    this.onSessionEnded = opts.onSessionEnded ?? (() => {});
    this.onPanelMessage = opts.onPanelMessage ?? (() => {});
    this.onPanelConnected = opts.onPanelConnected ?? (() => {});
    /** @type {Map<number, PanelEntry>} */
    this.panels = new Map();
    /** @type {Map<string, PanelEntry>} */
    this.bySession = new Map();
    /** @type {Map<string, Msg>} sessions of a previous SW incarnation not yet reclaimed */
    this.orphans = new Map();
    this.nextId = 1;
  }

  /**
   * Accept a runtime port (chrome.runtime.onConnect). Ports with other names are ignored.
   * @param {RuntimePort} port
   * @returns {PanelEntry | null}
   */
  attach(port) {
    if (port.name !== PANEL_PORT_NAME) return null;
    /** @type {PanelEntry} */
    const entry = { id: this.nextId++, port, sessions: new Map() };
    this.panels.set(entry.id, entry);
    port.onMessage.addListener((/** @type {any} */ msg) => {
      if (!msg || typeof msg !== 'object' || typeof msg.type !== 'string') return;
      this.onPanelMessage(entry, msg);
    });
    port.onDisconnect.addListener(() => this.detach(entry));
    this.onPanelConnected(entry);
    return entry;
  }

  /**
   * Record (or re-record) a session for a panel; call with the session.start sent to the host.
   * @param {PanelEntry} entry
   * @param {Msg} startMsg
   */
  register(entry, startMsg) {
    const id = String(startMsg.sessionId);
    const prev = this.bySession.get(id);
    if (prev && prev !== entry) {
      prev.sessions.delete(id);
      safePost(prev.port, { type: '__session_moved', sessionId: id });
    }
    this.orphans.delete(id);
    entry.sessions.set(id, startMsg);
    this.bySession.set(id, entry);
    void this.persist();
  }

  /**
   * The panel ended a session itself (it sent session.end).
   * @param {PanelEntry} entry
   * @param {string} sessionId
   */
  unregister(entry, sessionId) {
    if (this.bySession.get(sessionId) !== entry) return;
    entry.sessions.delete(sessionId);
    this.bySession.delete(sessionId);
    void this.persist();
  }

  /** @param {PanelEntry} entry */
  detach(entry) {
    if (!this.panels.delete(entry.id)) return;
    for (const id of entry.sessions.keys()) {
      if (this.bySession.get(id) === entry) {
        this.bySession.delete(id);
        this.onSessionEnded(id);
      }
    }
    entry.sessions.clear();
    void this.persist();
  }

  /**
   * Deliver a host message: to the owning panel, else to all panels.
   * @param {Msg} msg
   * @returns {'routed' | 'broadcast'}
   */
  route(msg) {
    const id = typeof msg.sessionId === 'string' ? msg.sessionId : undefined;
    const entry = id !== undefined ? this.bySession.get(id) : undefined;
    if (entry) {
      safePost(entry.port, msg);
      return 'routed';
    }
    this.broadcast(msg);
    return 'broadcast';
  }

  /** @param {Msg} msg */
  broadcast(msg) {
    for (const entry of this.panels.values()) safePost(entry.port, msg);
  }

  /** The session.start of every live session, to re-send after the connection is ready again. */
  startMessages() {
    /** @type {Msg[]} */
    const out = [];
    for (const [id, entry] of this.bySession) {
      const m = entry.sessions.get(id);
      if (m) out.push(m);
    }
    return out;
  }

  /** @param {string} sessionId */
  has(sessionId) {
    return this.bySession.has(sessionId);
  }

  /** Session ids of live panels (for tests and the test hook). */
  sessionIds() {
    return [...this.bySession.keys()];
  }

  /**
   * Load the previous incarnation's registry as orphans; forget unreclaimed ones after `graceMs`.
   * @param {number} [graceMs]
   */
  async restore(graceMs = 10_000) {
    try {
      const got = await this.chrome.storage.session.get(STORAGE_KEY);
      const saved = got?.[STORAGE_KEY];
      if (saved && typeof saved === 'object') {
        for (const [id, start] of Object.entries(saved)) {
          if (!this.bySession.has(id)) this.orphans.set(id, /** @type {Msg} */ (start));
        }
      }
    } catch (e) {
      console.warn('[browy] session restore failed', e);
    }
    if (graceMs >= 0 && this.orphans.size) {
      setTimeout(() => {
        this.orphans.clear();
        void this.persist();
      }, graceMs);
    }
    return [...this.orphans.keys()];
  }

  async persist() {
    /** @type {Record<string, Msg>} */
    const data = {};
    for (const [id, start] of this.orphans) data[id] = start;
    for (const [id, entry] of this.bySession) {
      const m = entry.sessions.get(id);
      if (m) data[id] = m;
    }
    try {
      await this.chrome.storage.session.set({ [STORAGE_KEY]: data });
    } catch {
      /* best effort */
    }
  }
}

/** @param {RuntimePort} port @param {any} msg */
function safePost(port, msg) {
  try {
    port.postMessage(msg);
  } catch {
    /* the panel went away; its onDisconnect cleans up */
  }
}
