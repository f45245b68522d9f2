// @ts-check
/**
 * CdpExecutor: runs the host's browser requests (protocol.md sections 2-4) and answers each with
 * exactly one `tool.result{sessionId, callId, ok, result?, error?}` — or none at all when the host
 * cancelled the call (`cdp.cancel`: "never answers late").
 *
 *   cdp.send{sessionId, callId, tabId?, method, params, controlOwnerId?, targetSessionId?}
 *        attach chrome.debugger ("1.3") on first use, sendCommand, answer {tabId, result}.
 *        targetSessionId (capability `cdp.targetSessions`, Chrome 125+): the command goes to that
 *        child session of the tab ({tabId, sessionId}: an out-of-process iframe the host attached
 *        with Target.setAutoAttach{flatten: true}); its events come back with the same field.
 *   tab.new / tab.activate / tab.list / tab.getActive / tab.close   answered with TabInfo(s)
 *   cdp.cancel{callId}          remember the id; the answer of that call is dropped
 *   control.release{ownerId}    forget the owner; detach tabs no other owner holds; clear the badge
 *
 * Events: chrome.debugger.onEvent is forwarded as `cdp.event{sessionId, tabId, method, params}` only
 * for domains the host enabled on that tab or child session (`<Domain>.enable` / `.disable`;
 * `Input` while `Input.setInterceptDrags{enabled: true}` holds, for `Input.dragIntercepted`; `Target`
 * while `Target.setAutoAttach{autoAttach: true}` holds, for `Target.attachedToTarget`) and only to the session
 * that last used the tab — not the v1 firehose. `Inspector.detached` is always forwarded to that
 * session, so the host learns a tab is gone from under it.
 *
 * Pages: only http:, https:, file: and about:blank are driven (section 5, URLs); everything else
 * (chrome:, edge:, brave:, other about:, chrome-extension:, devtools:, the Web Store, ...) gets
 * ok:false "NOT_ALLOWED_URL: <url>".
 *
 * JavaScript dialogs: only the debugger client that had `Page` enabled when a dialog opened can
 * answer it (`Page.handleJavaScriptDialog`); a client attached later is told "No dialog is
 * showing". So a tab with an open dialog (seen as `Page.javascriptDialogOpening` / `...Closed`) is
 * not detached — neither by `control.release` nor when idle — until the dialog closes; and a
 * released tab stays attached `releaseGraceMs` (2 s) in case the last action opens one late.
 *
 * Idle tabs are detached after `idleDetachMs` without calls so Chrome's "started debugging this
 * browser" bar does not linger. On a lost native connection, `connectionLost()` detaches
 * everything: the new connection's host starts from a clean slate (section 5, Reconnects), and
 * answers of the old connection's calls are dropped (generation check).
 *
 * The set of attached tabs is mirrored in chrome.storage.session so that a restarted service
 * worker detaches what its previous incarnation left attached (`restore()`).
 */

/** @typedef {{type: string, [k: string]: any}} Msg */
/** @typedef {{tabId: number, url: string, title: string, active: boolean, windowId?: number}} TabInfo */
/**
 * @typedef {object} TabState
 * @property {number} tabId
 * @property {boolean} attached
 * @property {Promise<void> | null} attaching
 * @property {Set<string>} domains
 * @property {string | null} sessionId   the session that last used the tab
 * @property {Set<string>} owners        controlOwnerIds that used it
 * @property {any} idleTimer
 * @property {string | undefined} [url] the tab's URL while attached (kept by tabs.onUpdated)
 * @property {Map<string, Set<string>>} [children] enabled domains per child session (targetSessionId)
 * @property {boolean} [dialog]   a JavaScript dialog is open (see the module comment)
 * @property {boolean} [released] released by every owner while a dialog was open: detach once it closes
 */

const STORAGE_KEY = 'browy.cdp.attached';
const DEBUGGER_VERSION = '1.3';
const WEB_STORE = [
  /^https?:\/\/chromewebstore\.google\.com(\/|$)/i,
  /^https?:\/\/chrome\.google\.com\/webstore(\/|$)/i,
  /^https?:\/\/microsoftedge\.microsoft\.com\/addons(\/|$)/i,
];

/**
 * May the agent drive a page with this URL? (protocol.md section 5, URLs)
 * @param {string | undefined} url
 * @param {{allowFile?: boolean}} [opts]
 */
export function isAllowedUrl(url, opts = {}) {
  if (url === undefined || url === '') return true; // a fresh tab whose URL is not known yet
  if (url === 'about:blank') return true;
  if (WEB_STORE.some((re) => re.test(url))) return false;
  const m = /^([a-z][a-z0-9+.-]*):/i.exec(url);
  const scheme = m ? m[1].toLowerCase() : '';
  if (scheme === 'http' || scheme === 'https') return true;
  if (scheme === 'file') return opts.allowFile !== false;
  return false;
}

/** @param {any} tab @returns {TabInfo} */
export function tabInfo(tab) {
  return {
    tabId: tab.id,
    // A tab still loading its first page has url '' and the address in pendingUrl.
    url: tab.url || tab.pendingUrl || '',
    title: tab.title ?? '',
    active: !!tab.active,
    windowId: tab.windowId,
  };
}

/**
 * @typedef {object} CdpOptions
 * @property {any} [chromeApi]
 * @property {(msg: Msg) => void} send                  to the host (NativeConnection.send)
 * @property {number} [idleDetachMs]
 * @property {number} [releaseGraceMs]   how long a released tab stays attached (a dialog may follow)
 * @property {number} [cancelledLimit]
 * @property {string} [badgeText]
 * @property {{setTimeout: typeof setTimeout, clearTimeout: typeof clearTimeout}} [timers]
 */

export class CdpExecutor {
  /** @param {CdpOptions} opts */
  constructor(opts) {
    this.chrome = opts.chromeApi ?? /** @type {any} */ (globalThis).chrome;
    this.sendToHost = opts.send;
    this.idleDetachMs = opts.idleDetachMs ?? 60_000;
    this.releaseGraceMs = opts.releaseGraceMs ?? 2_000;
    this.cancelledLimit = opts.cancelledLimit ?? 1000;
    this.badgeText = opts.badgeText ?? 'AI';
    this.timers = opts.timers ?? {
      setTimeout: globalThis.setTimeout.bind(globalThis),
      clearTimeout: globalThis.clearTimeout.bind(globalThis),
    };
    /** @type {Map<number, TabState>} */
    this.tabs = new Map();
    /** @type {Set<string>} callIds the host gave up on (bounded, oldest evicted first) */
    this.cancelled = new Set();
    /** @type {Set<string>} callIds in flight */
    this.pending = new Set();
    /** Bumped on each lost connection; answers of an older generation are dropped. */
    this.generation = 0;
    /** @type {Array<() => void>} */
    this.unlisten = [];
  }

  /** Subscribe to chrome.debugger events. Call once. */
  start() {
    const onEvent = (/** @type {any} */ source, /** @type {string} */ method, /** @type {any} */ params) =>
      this.handleDebuggerEvent(source, method, params);
    const onDetach = (/** @type {any} */ source, /** @type {string} */ reason) => this.handleDetach(source, reason);
    this.chrome.debugger.onEvent.addListener(onEvent);
    this.chrome.debugger.onDetach.addListener(onDetach);
    const onUpdated = (/** @type {number} */ tabId, /** @type {any} */ change, /** @type {any} */ tab) => {
      const st = this.tabs.get(tabId);
      if (st && (change?.url !== undefined || tab?.url !== undefined)) st.url = change?.url ?? tab?.url;
    };
    if (this.chrome.tabs?.onUpdated?.addListener) {
      this.chrome.tabs.onUpdated.addListener(onUpdated);
      this.unlisten.push(() => this.chrome.tabs.onUpdated.removeListener?.(onUpdated));
    }
    this.unlisten.push(
      () => this.chrome.debugger.onEvent.removeListener(onEvent),
      () => this.chrome.debugger.onDetach.removeListener(onDetach),
    );
  }

  stop() {
    for (const fn of this.unlisten.splice(0)) fn();
  }

  /** Detach what a previous service-worker incarnation left attached. */
  async restore() {
    try {
      const got = await this.chrome.storage.session.get(STORAGE_KEY);
      const ids = Array.isArray(got?.[STORAGE_KEY]) ? got[STORAGE_KEY] : [];
      for (const tabId of ids) {
        if (this.tabs.has(tabId)) continue;
        await this.chrome.debugger.detach({ tabId }).catch(() => {});
        await this.setBadge(tabId, '');
      }
      await this.persist();
    } catch (e) {
      console.warn('[browy] cdp restore failed', e);
    }
  }

  /**
   * Handle one host message of handler kind "cdp". Resolves when it has been answered (or dropped).
   * @param {Msg} msg
   */
  async handle(msg) {
    switch (msg.type) {
      case 'cdp.cancel':
        this.cancel(String(msg.callId));
        return;
      case 'control.release':
        await this.release(String(msg.ownerId));
        return;
      case 'cdp.send':
        return this.run(msg, () => this.cdpSend(msg));
      case 'tab.new':
        return this.run(msg, () => this.tabNew(msg));
      case 'tab.activate':
        return this.run(msg, () => this.tabActivate(msg));
      case 'tab.list':
        return this.run(msg, async () => (await this.chrome.tabs.query({})).map(tabInfo));
      case 'tab.getActive':
        return this.run(msg, () => this.tabGetActive(msg));
      case 'tab.close':
        return this.run(msg, () => this.tabClose(msg));
      default:
        console.warn('[browy] cdp executor: unknown type', msg.type);
    }
  }

  /** @param {string} callId */
  cancel(callId) {
    this.cancelled.add(callId);
    while (this.cancelled.size > this.cancelledLimit) {
      const first = this.cancelled.values().next().value;
      if (first === undefined) break;
      this.cancelled.delete(first);
    }
  }

  /**
   * Run one request and send exactly one answer, unless it was cancelled or its connection is gone.
   * @param {Msg} msg
   * @param {() => Promise<any>} fn
   */
  async run(msg, fn) {
    const gen = this.generation;
    const callId = String(msg.callId);
    this.pending.add(callId);
    /** @type {Msg} */
    let answer;
    try {
      const result = await fn();
      answer = { type: 'tool.result', sessionId: msg.sessionId, callId: msg.callId, ok: true, result };
    } catch (e) {
      answer = { type: 'tool.result', sessionId: msg.sessionId, callId: msg.callId, ok: false, error: errorText(e) };
    } finally {
      this.pending.delete(callId);
    }
    if (gen !== this.generation) return; // the connection that asked is gone (section 5)
    if (this.cancelled.has(callId)) {
      this.cancelled.delete(callId); // settled: nothing more can arrive for it
      return; // cdp.cancel: never answer late
    }
    this.sendToHost(answer);
  }

  /** @param {Msg} msg */
  async cdpSend(msg) {
    if (typeof msg.method !== 'string' || !msg.method) throw new Error('INVALID_MESSAGE: method');
    const tabId = typeof msg.tabId === 'number' ? msg.tabId : await this.defaultTabId();
    // The URL of an attached tab is kept current by tabs.onUpdated, which saves a browser round
    // trip per command (bench/bench_extension.py); chrome.debugger itself still refuses
    // browser-internal pages if a navigation races this check.
    let url = this.tabs.get(tabId)?.url;
    if (url === undefined) {
      const tab = await this.chrome.tabs.get(tabId);
      url = tab.url || tab.pendingUrl || '';
    }
    if (!isAllowedUrl(url)) throw new Error(`NOT_ALLOWED_URL: ${url}`);
    const st = await this.ensureAttached(tabId);
    if (st.url === undefined) st.url = url;
    st.sessionId = msg.sessionId ?? st.sessionId;
    if (msg.controlOwnerId) {
      if (!st.owners.has(msg.controlOwnerId)) {
        st.owners.add(msg.controlOwnerId);
        st.released = false;
        await this.setBadge(tabId, this.badgeText);
      }
    }
    this.touch(st);
    const child = typeof msg.targetSessionId === 'string' && msg.targetSessionId ? msg.targetSessionId : null;
    const target = child ? { tabId, sessionId: child } : { tabId };
    // Before the command: the events it causes at once (Target.attachedToTarget for the frames
    // already there) are dispatched before its answer.
    this.track(st, child, msg.method, msg.params);
    const result = await this.chrome.debugger.sendCommand(target, msg.method, msg.params ?? {});
    return { tabId, result: result ?? {} };
  }

  /**
   * Which domains' events the host wants, per tab and per child session.
   * @param {TabState} st @param {string | null} child @param {string} method @param {any} params
   */
  track(st, child, method, params) {
    let domains = st.domains;
    if (child) {
      st.children ??= new Map();
      domains = st.children.get(child) ?? new Set();
      st.children.set(child, domains);
    }
    const m = /^([A-Za-z]+)\.(enable|disable)$/.exec(method);
    if (m) {
      if (m[2] === 'enable') domains.add(m[1]);
      else domains.delete(m[1]);
    } else if (method === 'Input.setInterceptDrags' || method === 'Target.setAutoAttach') {
      // No enable of their own: their events (dragIntercepted, attachedToTarget) are wanted
      // while interception / auto-attaching is on.
      const domain = method.split('.', 1)[0];
      if (params?.enabled || params?.autoAttach) domains.add(domain);
      else domains.delete(domain);
    }
  }

  async defaultTabId() {
    const [tab] = await this.chrome.tabs.query({ active: true, lastFocusedWindow: true });
    if (!tab) throw new Error('no active tab');
    return tab.id;
  }

  /** @param {number} tabId @returns {Promise<TabState>} */
  async ensureAttached(tabId) {
    let st = this.tabs.get(tabId);
    if (!st) {
      st = { tabId, attached: false, attaching: null, domains: new Set(), sessionId: null, owners: new Set(), idleTimer: null, url: undefined };
      this.tabs.set(tabId, st);
    }
    if (st.attached) return st;
    if (!st.attaching) {
      const s = st;
      s.attaching = (async () => {
        try {
          await this.chrome.debugger.attach({ tabId }, DEBUGGER_VERSION);
          s.attached = true;
          await this.persist();
        } catch (e) {
          if (this.tabs.get(tabId) === s) this.tabs.delete(tabId);
          throw e;
        } finally {
          s.attaching = null;
        }
      })();
    }
    await st.attaching;
    return st;
  }

  /** Restart the idle-detach timer of a tab. @param {TabState} st */
  touch(st) {
    if (st.idleTimer) this.timers.clearTimeout(st.idleTimer);
    st.idleTimer = this.timers.setTimeout(() => {
      st.idleTimer = null;
      if (this.tabs.get(st.tabId) !== st) return;
      if (st.dialog) this.touch(st); // detaching would leave the dialog nobody can answer
      else void this.detach(st.tabId);
    }, this.idleDetachMs);
  }

  /** Detach one tab and forget its state. @param {number} tabId */
  async detach(tabId) {
    const st = this.tabs.get(tabId);
    if (!st) return;
    this.tabs.delete(tabId);
    if (st.idleTimer) this.timers.clearTimeout(st.idleTimer);
    if (st.attaching) await st.attaching.catch(() => {});
    if (st.attached || st.attaching) {
      await this.chrome.debugger.detach({ tabId }).catch(() => {});
    }
    await this.setBadge(tabId, '');
    await this.persist();
  }

  /** control.release: the owner's turn ended. @param {string} ownerId */
  async release(ownerId) {
    const jobs = [];
    for (const st of [...this.tabs.values()]) {
      if (!st.owners.delete(ownerId)) continue;
      // Another turn still holding the tab keeps it (and its enabled domains) attached; so does
      // an open dialog, which only this attachment can answer (detached when it closes), and
      // for `releaseGraceMs` the chance of one: the last action may open it a moment later (a
      // timer after a click), and a dialog that opens with nobody attached nobody can answer.
      if (st.owners.size > 0) continue;
      st.released = true;
      jobs.push(this.setBadge(st.tabId, ''));
      if (st.dialog) continue;
      if (this.releaseGraceMs <= 0) {
        jobs.push(this.detach(st.tabId));
        continue;
      }
      this.timers.setTimeout(() => {
        if (this.tabs.get(st.tabId) === st && st.released && st.owners.size === 0 && !st.dialog) {
          void this.detach(st.tabId);
        }
      }, this.releaseGraceMs);
    }
    await Promise.all(jobs);
  }

  /** The native connection dropped: detach everything, drop the old connection's answers. */
  async connectionLost() {
    this.generation += 1;
    this.cancelled.clear();
    await Promise.all([...this.tabs.keys()].map((id) => this.detach(id)));
  }

  /** @param {any} source @param {string} method @param {any} params */
  handleDebuggerEvent(source, method, params) {
    const tabId = source?.tabId;
    if (typeof tabId !== 'number') return;
    const st = this.tabs.get(tabId);
    if (!st) return;
    if (!source?.sessionId) this.trackDialog(st, method); // a child session's Page is not the tab's
    if (!st.sessionId) return;
    const domain = method.split('.', 1)[0];
    const child = typeof source?.sessionId === 'string' ? source.sessionId : null;
    if (child) {
      if (!st.children?.get(child)?.has(domain)) return;
      this.sendToHost({ type: 'cdp.event', sessionId: st.sessionId, tabId, method, params: params ?? {}, targetSessionId: child });
      return;
    }
    if (method === 'Target.detachedFromTarget' && typeof params?.sessionId === 'string') {
      st.children?.delete(params.sessionId);
    }
    if (!st.domains.has(domain)) return;
    this.sendToHost({ type: 'cdp.event', sessionId: st.sessionId, tabId, method, params: params ?? {} });
  }

  /** An open dialog keeps the tab attached (module comment). @param {TabState} st @param {string} method */
  trackDialog(st, method) {
    if (method === 'Page.javascriptDialogOpening') st.dialog = true;
    else if (method === 'Page.javascriptDialogClosed') {
      st.dialog = false;
      if (st.released && st.owners.size === 0) void this.detach(st.tabId);
    }
  }

  /** @param {any} source @param {string} reason */
  handleDetach(source, reason) {
    const tabId = source?.tabId;
    if (typeof tabId !== 'number') return;
    const st = this.tabs.get(tabId);
    if (!st) return;
    this.tabs.delete(tabId);
    if (st.idleTimer) this.timers.clearTimeout(st.idleTimer);
    if (st.sessionId) {
      this.sendToHost({ type: 'cdp.event', sessionId: st.sessionId, tabId, method: 'Inspector.detached', params: { reason } });
    }
    void this.setBadge(tabId, '');
    void this.persist();
  }

  /** @param {Msg} msg */
  async tabNew(msg) {
    const url = typeof msg.url === 'string' && msg.url ? msg.url : 'about:blank';
    if (!isAllowedUrl(url)) throw new Error(`NOT_ALLOWED_URL: ${url}`);
    /** @type {any} */
    const props = { url, active: msg.active !== false };
    if (typeof msg.windowId === 'number') props.windowId = msg.windowId;
    const tab = await this.chrome.tabs.create(props);
    if (typeof msg.group === 'string' && msg.group) await this.group(tab, msg.group);
    return tabInfo(tab);
  }

  /**
   * Put `tab` in its window's tab group titled `title` (made if missing): an MCP client's tabs,
   * grouped under its name (v2 `tab.new.group`, capability `tab.groups`). Tabs opened from a
   * grouped tab join its group by Chrome's own rule. A failure leaves the tab ungrouped.
   * @param {any} tab
   * @param {string} title
   */
  async group(tab, title) {
    const { tabs, tabGroups } = this.chrome;
    if (!tabGroups || typeof tabs.group !== 'function') return;
    try {
      const [existing] = await tabGroups.query({ title, windowId: tab.windowId });
      if (existing) {
        await tabs.group({ groupId: existing.id, tabIds: [tab.id] });
        return;
      }
      const groupId = await tabs.group({ tabIds: [tab.id], createProperties: { windowId: tab.windowId } });
      await tabGroups.update(groupId, { title, color: 'purple', collapsed: false });
    } catch (e) {
      console.warn('[browy] could not group the tab', e);
    }
  }

  /** @param {Msg} msg */
  async tabActivate(msg) {
    const tab = await this.chrome.tabs.update(msg.tabId, { active: true });
    if (tab?.windowId !== undefined && this.chrome.windows?.update) {
      await this.chrome.windows.update(tab.windowId, { focused: true }).catch(() => {});
    }
    return tabInfo(tab ?? (await this.chrome.tabs.get(msg.tabId)));
  }

  /** @param {Msg} msg */
  async tabGetActive(msg) {
    const query = typeof msg.windowId === 'number' ? { active: true, windowId: msg.windowId } : { active: true, lastFocusedWindow: true };
    const [tab] = await this.chrome.tabs.query(query);
    return tab ? tabInfo(tab) : null;
  }

  /** @param {Msg} msg */
  async tabClose(msg) {
    const tabId = msg.tabId;
    const tab = await this.chrome.tabs.get(tabId);
    await this.detach(tabId);
    await this.chrome.tabs.remove(tabId);
    return tabInfo(tab);
  }

  /** @param {number} tabId @param {string} text */
  async setBadge(tabId, text) {
    try {
      await this.chrome.action?.setBadgeText?.({ tabId, text });
    } catch {
      /* the tab may be gone */
    }
  }

  async persist() {
    try {
      const ids = [...this.tabs.values()].filter((s) => s.attached).map((s) => s.tabId);
      await this.chrome.storage.session.set({ [STORAGE_KEY]: ids });
    } catch {
      /* storage unavailable: best effort */
    }
  }
}

/** Chrome's error text (section 2: `error` is Chrome's error text). @param {unknown} e */
function errorText(e) {
  if (e && typeof e === 'object' && 'message' in e) return String(/** @type {any} */ (e).message);
  return String(e);
}
