// @ts-check
/**
 * A small fake of the `chrome` extension API, enough for lib/*.js: a real seam, not monkeypatching.
 * Native ports and runtime (panel) ports record what was posted and let the test push messages or
 * a disconnect (with a chrome.runtime.lastError text).
 */

export class FakeEvent {
  constructor() {
    /** @type {Function[]} */
    this.listeners = [];
  }
  /** @param {Function} fn */
  addListener(fn) {
    this.listeners.push(fn);
  }
  /** @param {Function} fn */
  removeListener(fn) {
    this.listeners = this.listeners.filter((f) => f !== fn);
  }
  /** @param {...any} args */
  emit(...args) {
    for (const fn of [...this.listeners]) fn(...args);
  }
}

export class FakePort {
  /** @param {string} name @param {any} chromeApi @param {any} [sender] */
  constructor(name, chromeApi, sender) {
    this.name = name;
    this.chromeApi = chromeApi;
    this.sender = sender;
    /** @type {any[]} */
    this.posted = [];
    this.onMessage = new FakeEvent();
    this.onDisconnect = new FakeEvent();
    this.disconnected = false;
  }
  /** @param {any} msg */
  postMessage(msg) {
    if (this.disconnected) throw new Error('Attempting to use a disconnected port object');
    this.posted.push(structuredClone(msg));
  }
  disconnect() {
    this.disconnected = true;
  }
  /** The other side sends a message. @param {any} msg */
  push(msg) {
    this.onMessage.emit(structuredClone(msg), this);
  }
  /** The other side goes away; `lastError` is seen by onDisconnect listeners. @param {string} [lastError] */
  drop(lastError) {
    this.disconnected = true;
    this.chromeApi.runtime.lastError = lastError ? { message: lastError } : undefined;
    this.onDisconnect.emit(this);
    this.chromeApi.runtime.lastError = undefined;
  }
  /** @param {string} type */
  ofType(type) {
    return this.posted.filter((m) => m.type === type);
  }
}

function storageArea() {
  /** @type {Record<string, any>} */
  const data = {};
  return {
    data,
    /** @param {string | string[] | null} [keys] */
    async get(keys) {
      if (keys == null) return structuredClone(data);
      const list = Array.isArray(keys) ? keys : [keys];
      /** @type {Record<string, any>} */
      const out = {};
      for (const k of list) if (k in data) out[k] = structuredClone(data[k]);
      return out;
    },
    /** @param {Record<string, any>} items */
    async set(items) {
      Object.assign(data, structuredClone(items));
    },
    /** @param {string | string[]} keys */
    async remove(keys) {
      for (const k of Array.isArray(keys) ? keys : [keys]) delete data[k];
    },
  };
}

/**
 * @param {{tabs?: any[]}} [opts]
 */
export function createFakeChrome(opts = {}) {
  /** @type {any} */
  const chrome = {};
  /** @type {FakePort[]} */
  const nativePorts = [];
  /** @type {Map<number, any>} */
  const tabs = new Map();
  let nextTabId = 100;
  for (const t of opts.tabs ?? [{ id: 1, url: 'https://example.com/', title: 'Example', active: true, windowId: 1 }]) {
    tabs.set(t.id, { ...t });
  }
  /** @type {{tabId: number, version: string}[]} */
  const attachCalls = [];
  /** @type {{tabId: number, method: string, params: any}[]} */
  const commands = [];
  /** @type {number[]} */
  const detachCalls = [];
  const attached = new Set();
  /** @type {Record<number, string>} */
  const badges = {};

  chrome.runtime = {
    lastError: undefined,
    id: 'kmfpcmoidebagkbcjhngabjpcgedcmna',
    getManifest: () => ({ version: '0.1.0' }),
    /** @param {string} name */
    connectNative(name) {
      const port = new FakePort(name, chrome);
      nativePorts.push(port);
      return port;
    },
    onConnect: new FakeEvent(),
  };
  chrome.storage = { local: storageArea(), session: storageArea() };
  chrome.debugger = {
    onEvent: new FakeEvent(),
    onDetach: new FakeEvent(),
    /** @type {(tabId: number, method: string, params: any) => Promise<any>} */
    handler: async (_tabId, method) => ({ ok: method }),
    /** @param {{tabId: number}} target @param {string} version */
    async attach(target, version) {
      attachCalls.push({ tabId: target.tabId, version });
      if (attached.has(target.tabId)) throw new Error('Another debugger is already attached to the tab with id: ' + target.tabId + '.');
      attached.add(target.tabId);
    },
    /** @param {{tabId: number}} target */
    async detach(target) {
      detachCalls.push(target.tabId);
      if (!attached.delete(target.tabId)) throw new Error('Debugger is not attached to the tab with id: ' + target.tabId + '.');
    },
    /** @param {{tabId: number}} target @param {string} method @param {any} params */
    async sendCommand(target, method, params) {
      if (!attached.has(target.tabId)) throw new Error('Debugger is not attached to the tab with id: ' + target.tabId + '.');
      commands.push(target.sessionId ? { tabId: target.tabId, sessionId: target.sessionId, method, params } : { tabId: target.tabId, method, params });
      return chrome.debugger.handler(target.tabId, method, params);
    },
  };
  chrome.tabs = {
    onUpdated: new FakeEvent(),
    /** @param {any} q */
    async query(q) {
      return [...tabs.values()].filter(
        (t) => (q.active === undefined || t.active === q.active) && (q.windowId === undefined || t.windowId === q.windowId),
      );
    },
    /** @param {number} id */
    async get(id) {
      const t = tabs.get(id);
      if (!t) throw new Error(`No tab with id: ${id}.`);
      return { ...t };
    },
    /** @param {any} props */
    async create(props) {
      const t = { id: nextTabId++, url: props.url, title: '', active: props.active !== false, windowId: props.windowId ?? 1 };
      if (t.active) for (const o of tabs.values()) if (o.windowId === t.windowId) o.active = false;
      tabs.set(t.id, t);
      return { ...t };
    },
    /** @param {number} id @param {any} props */
    async update(id, props) {
      const t = tabs.get(id);
      if (!t) throw new Error(`No tab with id: ${id}.`);
      if (props.active) for (const o of tabs.values()) if (o.windowId === t.windowId) o.active = o === t;
      return { ...t };
    },
    /** @param {number} id */
    async remove(id) {
      if (!tabs.delete(id)) throw new Error(`No tab with id: ${id}.`);
    },
  };
  chrome.windows = {
    async update() {
      return {};
    },
    async getLastFocused() {
      return { id: 1 };
    },
  };
  chrome.action = {
    /** @param {{tabId: number, text: string}} o */
    async setBadgeText(o) {
      badges[o.tabId] = o.text;
    },
  };
  chrome.sidePanel = { async setPanelBehavior() {} };
  /** @type {Map<number, any>} DownloadItems by id, for chrome.downloads.search({id}) */
  const downloads = new Map();
  chrome.downloads = {
    onCreated: new FakeEvent(),
    onChanged: new FakeEvent(),
    /** @param {{id?: number}} query */
    async search(query) {
      return [...downloads.values()].filter((d) => query.id === undefined || d.id === query.id).map((d) => structuredClone(d));
    },
  };

  /**
   * Open a panel port as a panel page would (chrome.runtime.connect({name: "panel"})).
   * @param {string} [name]
   */
  function connectPanel(name = 'panel') {
    const port = new FakePort(name, chrome, { id: chrome.runtime.id, url: 'chrome-extension://x/sidepanel.html' });
    chrome.runtime.onConnect.emit(port);
    return port;
  }

  return { chrome, nativePorts, tabs, attachCalls, detachCalls, commands, attached, badges, connectPanel, downloads };
}

/**
 * Manual timers: nothing runs until the test advances the clock.
 */
export function createFakeTimers() {
  let now = 0;
  let seq = 1;
  /** @type {Map<number, {at: number, fn: Function, every?: number}>} */
  const timers = new Map();
  const api = {
    now: () => now,
    /** @param {Function} fn @param {number} ms */
    setTimeout: (fn, ms) => {
      const id = seq++;
      timers.set(id, { at: now + (ms ?? 0), fn });
      return id;
    },
    /** @param {any} id */
    clearTimeout: (id) => void timers.delete(id),
    /** @param {Function} fn @param {number} ms */
    setInterval: (fn, ms) => {
      const id = seq++;
      timers.set(id, { at: now + ms, fn, every: ms });
      return id;
    },
    /** @param {any} id */
    clearInterval: (id) => void timers.delete(id),
    /** Advance the clock, running due timers in order. @param {number} ms */
    advance(ms) {
      const end = now + ms;
      for (;;) {
        let next = null;
        for (const [id, t] of timers) if (t.at <= end && (!next || t.at < next[1].at)) next = [id, t];
        if (!next) break;
        const [id, t] = /** @type {[number, {at: number, fn: Function, every?: number}]} */ (next);
        now = t.at;
        if (t.every) t.at += t.every;
        else timers.delete(id);
        t.fn();
      }
      now = end;
    },
    pending: () => timers.size,
  };
  return api;
}

/** Let pending promise callbacks run. */
export async function flush() {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}
