// @ts-check
/**
 * PanelPort: a panel page's runtime port to the service worker (name "panel").
 * The worker may stop and restart (MV3); its ports then close. PanelPort reconnects — which wakes
 * the worker — and calls `onConnect` again so the page re-sends its session.start.
 */

/** @typedef {{type: string, [k: string]: any}} Msg */

export class PanelPort {
  /**
   * @param {{chromeApi?: any, onMessage: (m: Msg) => void, onConnect?: () => void, retryMs?: number}} opts
   */
  constructor(opts) {
    this.chrome = opts.chromeApi ?? /** @type {any} */ (globalThis).chrome;
    this.onMessage = opts.onMessage;
    this.onConnect = opts.onConnect ?? (() => {});
    this.retryMs = opts.retryMs ?? 500;
    /** @type {any} */
    this.port = null;
    this.closed = false;
  }

  connect() {
    if (this.closed) return;
    const port = this.chrome.runtime.connect({ name: 'panel' });
    this.port = port;
    port.onMessage.addListener((/** @type {Msg} */ m) => this.onMessage(m));
    port.onDisconnect.addListener(() => {
      void this.chrome.runtime.lastError; // read it so Chrome does not log "Unchecked lastError"
      if (this.port !== port) return;
      this.port = null;
      if (!this.closed) setTimeout(() => this.connect(), this.retryMs);
    });
    this.onConnect();
  }

  /** @param {Msg} msg */
  send(msg) {
    try {
      this.port?.postMessage(msg);
      return !!this.port;
    } catch {
      return false;
    }
  }

  close() {
    this.closed = true;
    try {
      this.port?.disconnect();
    } catch {
      /* gone */
    }
    this.port = null;
  }
}

/** A short random id. */
export function shortId() {
  const a = new Uint8Array(6);
  crypto.getRandomValues(a);
  return Array.from(a, (b) => b.toString(16).padStart(2, '0')).join('');
}
