// @ts-check
/**
 * NativeConnection: the one owner of the native messaging port to `com.browy.host`.
 *
 * States (protocol.md section 4), held in a transition table; an illegal transition throws:
 *
 *     disconnected -> connecting -> awaiting_hello -> ready
 *
 * and four "disconnected, and here is why" states that each carry a fix for the user:
 *
 *     host_missing       lastError "Specified native messaging host not found."
 *     host_forbidden     lastError "Access to the specified native messaging host is forbidden."
 *                        or error{code: ORIGIN_FORBIDDEN}
 *     host_crashed       lastError "Native host has exited." or anything else; no hello.ack in time
 *     protocol_mismatch  error{code: PROTOCOL_MISMATCH}
 *
 * Rules:
 *   - Commands flow only in `ready`. While (re)connecting, `send()` queues a bounded number of
 *     messages for a short time; in a state that needs the user's action it drops them at once.
 *     Every dropped message is handed to `onDrop` so the caller can give a definite answer.
 *   - On `ready`, state listeners run BEFORE the queue is flushed, so a caller can re-register
 *     its sessions first (the queued chat.send then finds its session).
 *   - Keepalive: `ping{id}` every `keepaliveMs` while ready.
 *   - Reconnect after any drop, with Browy's one backoff policy (BACKOFF below); the attempt
 *     counter resets once `ready` is reached. After a reconnect the handshake runs again (section 5).
 *   - `close()` is idempotent and final: no reconnect follows.
 *
 * No top-level side effects: importable in node with a fake `chrome`.
 */

import { EXTENSION_CAPABILITIES, EXTENSION_ID, HOST_NAME, PROTOCOL_VERSION } from './protocol.js';
import { browserName } from './browser-name.js';
import { t } from './i18n.js';

/** @typedef {'disconnected'|'connecting'|'awaiting_hello'|'ready'|'host_missing'|'host_forbidden'|'host_crashed'|'protocol_mismatch'} ConnState */
/** @typedef {{type: string, [k: string]: any}} Msg */
/** @typedef {{state: ConnState, detail: string, fix: string}} StateInfo */

/** Problem states: disconnected for a known reason. */
const PROBLEMS = /** @type {const} */ (['host_missing', 'host_forbidden', 'host_crashed', 'protocol_mismatch']);

/** @type {Readonly<Record<ConnState, readonly ConnState[]>>} */
export const TRANSITIONS = Object.freeze({
  disconnected: ['connecting'],
  connecting: ['awaiting_hello', 'disconnected', ...PROBLEMS],
  awaiting_hello: ['ready', 'disconnected', ...PROBLEMS],
  ready: ['disconnected', ...PROBLEMS],
  host_missing: ['connecting', 'disconnected'],
  host_forbidden: ['connecting', 'disconnected'],
  host_crashed: ['connecting', 'disconnected'],
  protocol_mismatch: ['connecting', 'disconnected'],
});

/**
 * The reconnect backoff: Browy's one backoff policy (docs/architecture.md section 3), the same as
 * actors/runtime/backoff.py `Backoff` in the host, with this place's numbers. Attempt n waits
 * step = min(capMs, initialMs * factor ** n), jittered EQUAL: step / 2 + uniform [0, step / 2]
 * (`Jitter.EQUAL`). Each attempt here starts a host process, so a delay keeps at least half its
 * step; there is no time budget: the extension keeps trying until `close()`.
 */
export const BACKOFF = Object.freeze({ initialMs: 500, factor: 2, capMs: 30_000, jitter: 'equal' });

/** States in which the user must act; messages are not queued then. */
const NEEDS_USER = new Set(['host_missing', 'host_forbidden', 'protocol_mismatch']);

export class IllegalTransition extends Error {
  /** @param {ConnState} from @param {ConnState} to */
  constructor(from, to) {
    super(`illegal connection state transition ${from} -> ${to}`);
    this.name = 'IllegalTransition';
    this.from = from;
    this.to = to;
  }
}

/** The fix shown for each problem state (messages.json: a translation is a file). */
export const FIXES = Object.freeze({
  host_missing: () => t('fixHostMissing'),
  host_forbidden: () => t('fixHostForbidden', EXTENSION_ID),
  host_crashed: () => t('fixHostCrashed'),
  protocol_mismatch: () => t('fixProtocolMismatch'),
});

/**
 * Map chrome.runtime.lastError text of a native port's disconnect to a problem state.
 * @param {string | undefined} text
 * @returns {'host_missing'|'host_forbidden'|'host_crashed'}
 */
export function classifyDisconnect(text) {
  const lower = (text || '').toLowerCase();
  if (lower.includes('specified native messaging host not found')) return 'host_missing';
  if (lower.includes('access to the specified native messaging host is forbidden')) return 'host_forbidden';
  return 'host_crashed'; // "Native host has exited.", "Error when communicating ...", anything else
}

/**
 * @typedef {object} NativeOptions
 * @property {any} [chromeApi]            defaults to globalThis.chrome
 * @property {string} [hostName]
 * @property {string} [extensionVersion]
 * @property {readonly string[]} [capabilities]
 * @property {(msg: Msg) => void} [onMessage]     every host message except hello.ack/ping/pong
 * @property {(info: StateInfo) => void} [onState]
 * @property {(msg: Msg, reason: string) => void} [onDrop]
 * @property {number} [keepaliveMs]
 * @property {number} [helloTimeoutMs]
 * @property {number} [baseBackoffMs]
 * @property {number} [maxBackoffMs]
 * @property {number} [queueLimit]
 * @property {number} [queueMaxAgeMs]
 * @property {{setTimeout: typeof setTimeout, clearTimeout: typeof clearTimeout, setInterval: typeof setInterval, clearInterval: typeof clearInterval, now: () => number}} [timers]
 * @property {() => number} [random]          0..1, for backoff jitter
 * @property {number} [protocol]              the protocol our hello offers (tests force 1)
 */

export class NativeConnection {
  /** @param {NativeOptions} [opts] */
  constructor(opts = {}) {
    this.chrome = opts.chromeApi ?? /** @type {any} */ (globalThis).chrome;
    this.hostName = opts.hostName ?? HOST_NAME;
    this.extensionVersion = opts.extensionVersion ?? safeVersion(this.chrome);
    this.capabilities = [...(opts.capabilities ?? EXTENSION_CAPABILITIES)];
    this.onMessage = opts.onMessage ?? (() => {});
    /** @type {Array<(info: StateInfo) => void>} */
    this.stateListeners = opts.onState ? [opts.onState] : [];
    this.onDrop = opts.onDrop ?? (() => {});
    this.keepaliveMs = opts.keepaliveMs ?? 20_000;
    this.helloTimeoutMs = opts.helloTimeoutMs ?? 10_000;
    this.baseBackoffMs = opts.baseBackoffMs ?? BACKOFF.initialMs;
    this.maxBackoffMs = opts.maxBackoffMs ?? BACKOFF.capMs;
    this.queueLimit = opts.queueLimit ?? 100;
    this.queueMaxAgeMs = opts.queueMaxAgeMs ?? 15_000;
    this.timers = opts.timers ?? {
      setTimeout: globalThis.setTimeout.bind(globalThis),
      clearTimeout: globalThis.clearTimeout.bind(globalThis),
      setInterval: globalThis.setInterval.bind(globalThis),
      clearInterval: globalThis.clearInterval.bind(globalThis),
      now: () => Date.now(),
    };
    this.random = opts.random ?? Math.random;
    /** The protocol our hello offers: PROTOCOL_VERSION; 1 (tests only) says hello as a v1 SW. */
    this.protocol = opts.protocol ?? PROTOCOL_VERSION;

    /** @type {ConnState} */
    this.state = 'disconnected';
    this.detail = '';
    /** @type {any} */
    this.port = null;
    /** @type {Array<{msg: Msg, at: number}>} */
    this.queue = [];
    this.attempt = 0;
    this.closed = false;
    this.pingSeq = 0;
    /** @type {any} */ this.keepaliveTimer = null;
    /** @type {any} */ this.helloTimer = null;
    /** @type {any} */ this.reconnectTimer = null;
    /** @type {Msg | null} the last hello.ack */
    this.serverHello = null;
    /** @type {Promise<string> | null} */
    this.installIdPromise = null;
  }

  /** @param {(info: StateInfo) => void} fn */
  addStateListener(fn) {
    this.stateListeners.push(fn);
  }

  /** @returns {StateInfo} */
  info() {
    const fix = /** @type {Record<string, () => string>} */ (FIXES)[this.state]?.() ?? '';
    return { state: this.state, detail: this.detail, fix };
  }

  /**
   * Move to `to`, or throw IllegalTransition. Notifies state listeners.
   * @param {ConnState} to
   * @param {string} [detail]
   */
  transition(to, detail = '') {
    if (!TRANSITIONS[this.state].includes(to)) throw new IllegalTransition(this.state, to);
    this.state = to;
    this.detail = detail;
    const info = this.info();
    for (const fn of this.stateListeners) {
      try {
        fn(info);
      } catch (e) {
        console.error('[browy] state listener failed', e);
      }
    }
  }

  /** The random id of this browser profile's install, persisted in chrome.storage.local. */
  installId() {
    if (!this.installIdPromise) {
      this.installIdPromise = (async () => {
        const key = 'browy.installId';
        const got = await this.chrome.storage.local.get(key);
        if (typeof got?.[key] === 'string' && got[key]) return got[key];
        const id = randomId(16);
        await this.chrome.storage.local.set({ [key]: id });
        return id;
      })();
    }
    return this.installIdPromise;
  }

  /**
   * Open the port and send hello. No-op unless disconnected (or in a problem state).
   * @returns {Promise<void>}
   */
  async connect() {
    if (this.closed) return;
    if (this.state === 'connecting' || this.state === 'awaiting_hello' || this.state === 'ready') return;
    this.clearReconnect();
    this.transition('connecting');
    let installId;
    try {
      installId = await this.installId();
    } catch (e) {
      installId = 'unknown';
    }
    if (this.closed || this.state !== 'connecting') return;
    /** @type {any} */
    let port;
    try {
      port = this.chrome.runtime.connectNative(this.hostName);
    } catch (e) {
      this.fail(classifyDisconnect(String(/** @type {any} */ (e)?.message ?? e)), String(/** @type {any} */ (e)?.message ?? e));
      return;
    }
    this.port = port;
    port.onMessage.addListener((/** @type {Msg} */ msg) => this.handlePortMessage(port, msg));
    port.onDisconnect.addListener(() => {
      const text = this.chrome.runtime.lastError?.message ?? port.error?.message ?? '';
      this.handlePortDisconnect(port, text);
    });
    this.transition('awaiting_hello');
    this.post(this.protocol < 2 ? { type: 'hello', client: 'extension', protocol: this.protocol } : {
      type: 'hello',
      client: 'extension',
      protocol: this.protocol,
      extensionVersion: this.extensionVersion,
      installId,
      capabilities: this.capabilities,
      browser: browserName(/** @type {any} */ (globalThis).navigator),
    });
    this.helloTimer = this.timers.setTimeout(() => {
      if (this.port === port && this.state === 'awaiting_hello') {
        this.dropPort();
        this.fail('host_crashed', 'no hello.ack from the host in time');
      }
    }, this.helloTimeoutMs);
  }

  /**
   * Send a message to the host: now when ready, else queued briefly (bounded).
   * @param {Msg} msg
   * @returns {'sent' | 'queued' | 'dropped'}
   */
  send(msg) {
    if (this.state === 'ready' && this.port) {
      return this.post(msg) ? 'sent' : 'dropped';
    }
    if (this.closed || NEEDS_USER.has(this.state)) {
      this.onDrop(msg, this.closed ? 'closed' : this.state);
      return 'dropped';
    }
    if (this.queue.length >= this.queueLimit) {
      this.onDrop(msg, 'queue_full');
      return 'dropped';
    }
    this.queue.push({ msg, at: this.timers.now() });
    return 'queued';
  }

  /** Is the connection ready for commands? */
  get ready() {
    return this.state === 'ready';
  }

  /** Close for good (idempotent). Queued messages are dropped. */
  close() {
    if (this.closed) return;
    this.closed = true;
    this.clearReconnect();
    this.dropPort();
    this.dropQueue('closed');
    if (this.state !== 'disconnected') this.transition('disconnected', 'closed');
  }

  /** Reconnect now instead of waiting for the backoff timer (e.g. the user pressed "Retry"). */
  retryNow() {
    if (this.closed) return;
    if (this.state === 'ready' || this.state === 'connecting' || this.state === 'awaiting_hello') return;
    this.attempt = 0;
    void this.connect();
  }

  // ---- internals -------------------------------------------------------------------------

  /** @param {Msg} msg */
  post(msg) {
    try {
      this.port.postMessage(msg);
      return true;
    } catch (e) {
      // postMessage throws on a disconnected port or a >64 MiB message; the port survives the latter.
      console.error('[browy] postMessage failed', e);
      return false;
    }
  }

  /** @param {any} port @param {Msg} msg */
  handlePortMessage(port, msg) {
    if (port !== this.port || !msg || typeof msg !== 'object') return;
    switch (msg.type) {
      case 'hello.ack':
        if (this.state !== 'awaiting_hello') return; // the relay swallows repeats; ignore strays
        this.timers.clearTimeout(this.helloTimer);
        this.serverHello = msg;
        this.attempt = 0;
        this.transition('ready', `host ${msg.serverVersion ?? '?'} protocol ${msg.protocol ?? '?'}`);
        this.startKeepalive();
        this.flushQueue();
        return;
      case 'ping':
        this.post({ type: 'pong', id: msg.id });
        return;
      case 'pong':
        return;
      case 'error':
        if (msg.code === 'PROTOCOL_MISMATCH' || msg.code === 'ORIGIN_FORBIDDEN') {
          this.dropPort();
          this.fail(msg.code === 'PROTOCOL_MISMATCH' ? 'protocol_mismatch' : 'host_forbidden', String(msg.message ?? msg.code));
          return;
        }
        break;
    }
    this.onMessage(msg);
  }

  /** @param {any} port @param {string} text */
  handlePortDisconnect(port, text) {
    if (port !== this.port) return; // a port we already dropped
    this.port = null;
    this.stopTimers();
    this.fail(classifyDisconnect(text), text || 'the native port closed');
  }

  /**
   * Enter a problem state and schedule a reconnect.
   * @param {ConnState} problem
   * @param {string} detail
   */
  fail(problem, detail) {
    this.stopTimers();
    if (this.state !== problem) this.transition(problem, detail);
    else this.detail = detail;
    if (NEEDS_USER.has(problem)) this.dropQueue(problem);
    this.scheduleReconnect();
  }

  /** The delay before reconnect attempt n (0-based): BACKOFF's step, EQUAL jitter. */
  backoffMs(n = this.attempt) {
    const step = Math.min(this.maxBackoffMs, this.baseBackoffMs * BACKOFF.factor ** Math.min(n, 20));
    // EQUAL jitter: in [0.5, 1] of the step, never above the cap.
    return Math.min(this.maxBackoffMs, Math.round(step * (0.5 + this.random() / 2)));
  }

  scheduleReconnect() {
    if (this.closed || this.reconnectTimer) return;
    const delay = this.backoffMs();
    this.attempt += 1;
    this.reconnectTimer = this.timers.setTimeout(() => {
      this.reconnectTimer = null;
      void this.connect();
    }, delay);
  }

  clearReconnect() {
    if (this.reconnectTimer) this.timers.clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
  }

  startKeepalive() {
    this.timers.clearInterval(this.keepaliveTimer);
    this.keepaliveTimer = this.timers.setInterval(() => {
      if (this.state === 'ready') this.post({ type: 'ping', id: `k${++this.pingSeq}` });
    }, this.keepaliveMs);
  }

  stopTimers() {
    this.timers.clearInterval(this.keepaliveTimer);
    this.timers.clearTimeout(this.helloTimer);
    this.keepaliveTimer = null;
    this.helloTimer = null;
  }

  dropPort() {
    const port = this.port;
    this.port = null;
    this.stopTimers();
    if (port) {
      try {
        port.disconnect();
      } catch {
        /* already gone */
      }
    }
  }

  flushQueue() {
    const now = this.timers.now();
    const items = this.queue.splice(0);
    for (const { msg, at } of items) {
      if (now - at > this.queueMaxAgeMs) this.onDrop(msg, 'expired');
      else if (!this.post(msg)) this.onDrop(msg, 'post_failed');
    }
  }

  /** @param {string} reason */
  dropQueue(reason) {
    for (const { msg } of this.queue.splice(0)) this.onDrop(msg, reason);
  }
}

/** @param {any} chromeApi */
function safeVersion(chromeApi) {
  try {
    return chromeApi?.runtime?.getManifest?.().version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/**
 * A random hex id.
 * @param {number} bytes
 */
export function randomId(bytes = 8) {
  const a = new Uint8Array(bytes);
  globalThis.crypto.getRandomValues(a);
  return Array.from(a, (b) => b.toString(16).padStart(2, '0')).join('');
}
