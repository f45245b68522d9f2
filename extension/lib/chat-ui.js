// @ts-check
/**
 * The chat UI shared by the side panel (`sp-…`) and the DevTools panel (`dt-…`).
 *
 * It talks to the service worker over a PanelPort and renders (protocol.md 3/3b/4):
 *   chat.delta (appended, markdown), chat.done (replaces the streamed text with `text`),
 *   chat.error, chat.tool_call / chat.tool_result (cards with outcome and duration), chat.queued,
 *   event.activity (busy until status.idle|status.error — or chat.done|chat.error), usage,
 *   approval.request -> approval.response, user.ask -> user.answer,
 *   chat.list / chat.history / chat.delete, models.list / models.current / models.set,
 *   auth.status, sdk.ready, error, and the SW's `__state` banner with its fix.
 * The session id is kept per window (side panel) or tab (DevTools) for this browser run, and the
 * last one in chrome.storage.local, so reopening the panel — even after a browser restart —
 * resumes the chat (panel-chat-id.js).
 * The DOM is built with createElement/textContent; innerHTML only takes sanitized markdown
 * (rich-text.js: highlighted code blocks with a Copy button; each final answer has a Copy button
 * that copies its markdown source). Helpers, each in its own module: prompts.js (approval and
 * question cards, focus rules), scroll-follow.js (follow the bottom only while the reader is
 * there; the "New messages" pill), chat-list.js (saved chats, Markdown export), clients-bar.js
 * (the MCP clients driving this browser: stop one, hand it a tab), images.js (a tool's screenshot
 * shown inline, fetched with image.get), i18n.js.
 */

import { ChatList } from './chat-list.js';
import { ClientsBar } from './clients-bar.js';
import { InlineImages } from './images.js';
import { TurnEditing } from './turn-edit.js';
import { brief, h } from './dom.js';
import { t } from './i18n.js';
import { panelChatId, rememberPanelChatId } from './panel-chat-id.js';
import { PanelPort, shortId } from './panel-port.js';
import { approvalCard, askCard, focusPrompt } from './prompts.js';
import { copyButton, renderRich } from './rich-text.js';
import { ScrollFollower } from './scroll-follow.js';

/** @typedef {{type: string, [k: string]: any}} Msg */

/**
 * @typedef {object} ChatOptions
 * @property {string} prefix              "sp" or "dt"
 * @property {string} storageKey          where this panel's session id is kept (panel-chat-id.js)
 * @property {number} [inspectedTabId]    DevTools: the inspected tab
 * @property {number} [windowId]          side panel: its window
 * @property {any} [chromeApi]
 */

/** The banner's text for each connection state (lib/native.js); "ready" has none. */
const STATE_TEXT = /** @type {Record<string, () => string>} */ ({
  disconnected: () => t('stateDisconnected'),
  connecting: () => t('stateConnecting'),
  awaiting_hello: () => t('stateConnecting'),
  host_missing: () => t('stateHostMissing'),
  host_forbidden: () => t('stateHostForbidden'),
  host_crashed: () => t('stateHostCrashed'),
  protocol_mismatch: () => t('stateProtocolMismatch'),
});

/**
 * A tool outcome (protocol.md 4: ok | error | unknown) in the user's words.
 * @param {string} outcome
 */
function outcomeWord(outcome) {
  if (outcome === 'ok') return t('outcomeOk');
  if (outcome === 'error') return t('outcomeError');
  if (outcome === 'unknown') return t('outcomeUnknown');
  return outcome;
}

/**
 * Mount the chat into `root`.
 * @param {HTMLElement} root
 * @param {ChatOptions} opts
 */
export async function mountChat(root, opts) {
  const chromeApi = opts.chromeApi ?? /** @type {any} */ (globalThis).chrome;
  let sessionId = await panelChatId(chromeApi, opts.prefix, opts.storageKey, () => `${opts.prefix}-${shortId()}`);

  // ---- DOM ----------------------------------------------------------------------------------
  const banner = h('div', { class: 'banner', role: 'status', hidden: true });
  const notice = h('div', { class: 'notice', role: 'alert', hidden: true });
  const modelSelect = /** @type {HTMLSelectElement} */ (h('select', { class: 'model', 'aria-label': t('modelLabel'), title: t('modelLabel') }));
  const chatsButton = h('button', { type: 'button', class: 'ghost', title: t('chatsButton'), 'aria-expanded': 'false', text: t('chatsButton') });
  const newButton = h('button', { type: 'button', class: 'ghost', title: t('newChatTitle'), text: t('newChatButton') });
  const header = h('header', { class: 'bar' }, modelSelect, chatsButton, newButton);
  const log = h('main', { class: 'log', 'aria-live': 'polite' });
  const newMessages = h('button', { type: 'button', class: 'new-messages', hidden: true, text: t('newMessages') });
  const logArea = h('div', { class: 'log-area' }, log, newMessages);
  const status = h('div', { class: 'status' });
  const usageLine = h('div', { class: 'usage' });
  const input = /** @type {HTMLTextAreaElement} */ (
    h('textarea', { rows: 2, placeholder: t('composerPlaceholder'), 'aria-label': t('composerLabel') })
  );
  const sendButton = h('button', { type: 'submit', class: 'primary', text: t('sendButton') });
  const stopButton = h('button', { type: 'button', class: 'stop', hidden: true, title: t('stopTitle'), text: t('stopButton') });
  const form = h('form', { class: 'composer' }, input, h('div', { class: 'actions' }, stopButton, sendButton));
  const chats = new ChatList({
    currentId: () => sessionId,
    open: (id) => void openChat(id),
    remove: (id) => port.send({ type: 'chat.delete', id }),
    fetchPage: (req) => requestHistory(req.id, 'export', req.before, req.limit),
    notify: (text) => showNotice(text),
  });
  const chatList = chats.el;
  const clients = new ClientsBar({
    send: (m) => port.send({ ...m, sessionId }),
    activeTab: async () => {
      if (typeof opts.inspectedTabId === 'number') return opts.inspectedTabId;
      const query = typeof opts.windowId === 'number' ? { active: true, windowId: opts.windowId } : { active: true, lastFocusedWindow: true };
      const [tab] = await chromeApi.tabs.query(query).catch(() => []);
      return typeof tab?.id === 'number' ? tab.id : null;
    },
  });
  root.replaceChildren(banner, header, clients.el, chatList, notice, logArea, status, usageLine, form);
  const images = new InlineImages((m) => port.send({ ...m, sessionId }));
  const turns = new TurnEditing({
    log,
    resend: (text, replaces) => send(text, replaces),
    edit: (text) => {
      input.value = text;
      input.focus();
      status.textContent = t('statusEditing');
    },
    notice: (text) => showNotice(text),
  });

  // ---- state --------------------------------------------------------------------------------
  let connState = 'connecting';
  let busy = false;
  /** @type {{el: HTMLElement, body: HTMLElement, text: string} | null} */
  let streaming = null;
  /** @type {Map<string, HTMLElement>} */
  const toolCards = new Map();
  /** @type {string | null} */
  let turnId = null;
  let renderPending = false;
  /** @type {number | undefined} */
  let oldestTimestamp;
  /**
   * What each chat.history this panel sent is for, per chat id, oldest first (the answers come
   * in order, and are broadcast to every panel: one nobody here asked for is ignored).
   * @type {Map<string, ('open' | 'older' | 'export')[]>}
   */
  const historyWanted = new Map();
  // The log follows new content only while the reader is at its bottom (scroll-follow.js).
  const follower = new ScrollFollower(log, { onUnseen: (unseen) => void (newMessages.hidden = !unseen) });

  const port = new PanelPort({
    chromeApi,
    onMessage: (m) => handle(m),
    onConnect: () => startSession(),
  });

  function startSession() {
    /** @type {Msg} */
    const start = { type: 'session.start', sessionId, capabilities: ['cdp.activeTab'] };
    if (typeof opts.inspectedTabId === 'number') start.inspectedTabId = opts.inspectedTabId;
    if (typeof opts.windowId === 'number') start.windowId = opts.windowId;
    port.send(start);
  }

  /** @param {string} text */
  function showNotice(text) {
    notice.textContent = text;
    notice.hidden = !text;
    delete notice.dataset.kind;
  }

  /** @param {boolean} on */
  function setBusy(on) {
    busy = on;
    stopButton.hidden = !on;
    root.classList.toggle('busy', on);
    if (!on) {
      status.textContent = '';
      turnId = null;
      turns.ended();
    }
  }

  /** @param {Node} el */
  function append(el) {
    follower.change(() => log.append(el));
  }

  /** @param {'user' | 'error' | 'info'} role @param {string} text */
  function addRow(role, text) {
    const el = h('div', { class: `msg ${role}`, text });
    append(el);
    return el;
  }

  /**
   * Ask for (a page of) a chat's history: to show it ('open'), older rows above it ('older'),
   * or for an export (chat-list.js).
   * @param {string} id @param {'open' | 'older' | 'export'} purpose @param {number} [before] @param {number} [limit]
   */
  function requestHistory(id, purpose, before, limit = 100) {
    historyWanted.set(id, [...(historyWanted.get(id) ?? []), purpose]);
    port.send(before === undefined ? { type: 'chat.history', id, limit } : { type: 'chat.history', id, before, limit });
  }

  /**
   * An assistant answer: its markdown rendered, and (once final) a button copying that markdown.
   * @param {string} text
   * @param {{live?: boolean}} [o] live: still streaming (no copy button; replaced at chat.done)
   */
  function assistantRow(text, o = {}) {
    const body = h('div', { class: 'md' });
    renderRich(body, text);
    const el = h('div', { class: `msg assistant${o.live ? ' turn-live' : ''}` }, body);
    if (!o.live) {
      el.append(h('div', { class: 'msg-actions' }, copyButton(() => text, { label: t('copyButton'), title: t('copyAnswerTitle'), className: 'copy-answer' })));
    }
    return { el, body };
  }

  function renderStreaming() {
    renderPending = false;
    const live = streaming;
    if (live) follower.change(() => renderRich(live.body, live.text));
  }

  /** @param {string} name @param {any} args */
  function toolCard(name, args) {
    const card = h(
      'details',
      { class: 'tool running' },
      h('summary', {}, h('span', { class: 'tool-name', text: name }), h('span', { class: 'tool-outcome', text: t('toolRunning') })),
      h('pre', { class: 'tool-args', text: brief(args, 2000) }),
      h('div', { class: 'tool-summary' }),
    );
    append(card);
    return card;
  }

  /** @param {HTMLElement} card @param {Msg} m */
  function finishToolCard(card, m) {
    const outcome = m.outcome ?? (m.ok ? 'ok' : 'error');
    card.classList.remove('running');
    card.classList.add(outcome);
    const word = outcomeWord(outcome);
    follower.change(() => {
      const out = card.querySelector('.tool-outcome');
      if (out) out.textContent = typeof m.durationMs === 'number' ? t('toolOutcomeWithDuration', word, (m.durationMs / 1000).toFixed(1)) : word;
      const sum = card.querySelector('.tool-summary');
      if (sum) sum.textContent = m.summary ?? '';
    });
  }

  // ---- prompts --------------------------------------------------------------------------------

  /** @type {import('./prompts.js').PromptHooks} */
  const promptHooks = {
    send: (msg) => port.send(msg),
    // The answered card had the focus (or nothing has): give it back to the composer.
    settled: (card) => {
      const active = root.ownerDocument.activeElement;
      if (!active || active === root.ownerDocument.body || card.contains(active)) input.focus();
    },
  };

  /** @param {HTMLElement} card */
  function showPrompt(card) {
    append(card);
    focusPrompt(card);
  }

  // ---- chats and history -------------------------------------------------------------------------

  /** @param {string} id */
  async function switchSession(id) {
    if (id === sessionId) return;
    port.send({ type: 'session.end', sessionId });
    sessionId = id;
    await rememberPanelChatId(chromeApi, opts.prefix, opts.storageKey, sessionId);
    log.replaceChildren();
    follower.toBottom();
    toolCards.clear();
    streaming = null;
    setBusy(false);
    usageLine.textContent = '';
    startSession();
  }

  /** @param {string} id */
  async function openChat(id) {
    chatList.hidden = true;
    chatsButton.setAttribute('aria-expanded', 'false');
    await switchSession(id);
    requestHistory(id, 'open');
  }

  /** @param {Msg} m @param {'open' | 'older'} purpose */
  function renderHistory(m, purpose) {
    const rows = Array.isArray(m.messages) ? m.messages : [];
    const frag = document.createDocumentFragment();
    /** @type {HTMLElement[]} */
    const els = [];
    for (const r of rows) {
      /** @type {HTMLElement | null} */
      let el = null;
      if (r.role === 'user') el = h('div', { class: 'msg user', text: r.text ?? '' });
      else if (r.role === 'assistant') el = assistantRow(r.text ?? '').el;
      else if (r.role === 'tool') {
        el = h('div', { class: `tool-row ${r.ok ? 'ok' : 'error'}` }, h('span', { class: 'tool-name', text: r.name ?? 'tool' }), h('span', { text: ` ${outcomeWord(r.ok ? 'ok' : 'error')} ${r.summary ?? ''}` }));
      }
      if (el) frag.append(el);
      els.push(el ?? h('span'));
    }
    const first = rows.find((r) => typeof r.timestamp === 'number');
    if (first) oldestTimestamp = first.timestamp;
    const place = () => {
      log.querySelector('.load-older')?.remove();
      if (m.hasMore && oldestTimestamp !== undefined) {
        const before = oldestTimestamp;
        frag.prepend(h('button', { type: 'button', class: 'ghost load-older', text: t('loadOlder'), onclick: () => requestHistory(sessionId, 'older', before) }));
      }
      log.prepend(frag);
    };
    if (purpose === 'older') follower.prepend(place); // keep the reader's place
    else {
      place();
      follower.toBottom();
    }
    // Each row knows its turn (regenerate / edit the last one); an older page is only tagged.
    turns.tagHistory(els, rows, { newest: purpose !== 'older' });
  }

  // ---- inbound ------------------------------------------------------------------------------------

  /** @param {Msg} m */
  function handle(m) {
    if (typeof m.sessionId === 'string' && m.sessionId !== sessionId) return;
    switch (m.type) {
      case '__state': {
        const waiting = m.state === 'connecting' || m.state === 'awaiting_hello';
        if (m.state !== 'ready' && (connState === 'ready' || !waiting)) {
          // The history requests in flight get no answer: those of a connection that went are
          // not moved to the next (protocol.md 5), and a problem state drops what is queued.
          historyWanted.clear();
          chats.failAll();
        }
        connState = m.state;
        const text = STATE_TEXT[m.state]?.();
        banner.hidden = m.state === 'ready';
        banner.className = `banner state-${m.state}`;
        banner.replaceChildren();
        if (text) {
          banner.append(h('div', { class: 'banner-text', text }));
          if (m.fix) banner.append(h('code', { class: 'fix', text: m.fix }));
          if (m.detail && m.detail !== text) banner.append(h('div', { class: 'muted', text: m.detail }));
          if (m.state !== 'connecting' && m.state !== 'awaiting_hello') {
            banner.append(h('button', { type: 'button', text: t('retryNow'), onclick: () => port.send({ type: '__retry' }) }));
          }
        }
        return;
      }
      case '__session_moved':
        showNotice(t('noticeSessionMoved'));
        return;
      case '__dropped':
        showNotice(t('noticeDropped', m.reason ?? '', m.dropped ?? ''));
        return;
      case 'session.ready':
        showNotice('');
        return;
      case 'sdk.ready':
        if (m.ok === false) showNotice(t('noticeBackendFailed', m.detail ?? ''));
        return;
      case 'auth.status':
        if (m.state === 'unauth') {
          showNotice(t('noticeNotSignedIn', m.detail ?? ''));
          notice.dataset.kind = 'auth';
        } else if (m.state === 'ready' && notice.dataset.kind === 'auth') showNotice('');
        return;
      case 'models.list': {
        const current = modelSelect.value;
        modelSelect.replaceChildren(...(m.models ?? []).map((/** @type {any} */ x) => h('option', { value: x.id, text: x.name ?? x.id })));
        if (current) modelSelect.value = current;
        return;
      }
      case 'models.current':
        if (![...modelSelect.options].some((o) => o.value === m.id)) modelSelect.append(h('option', { value: m.id, text: m.id }));
        modelSelect.value = m.id;
        return;
      case 'chat.delta':
        if (!streaming) {
          streaming = { ...assistantRow('', { live: true }), text: '' };
          append(streaming.el);
        }
        streaming.text += m.text ?? '';
        if (!renderPending) {
          renderPending = true;
          requestAnimationFrame(renderStreaming);
        }
        if (!busy) setBusy(true);
        return;
      case 'chat.tool_call':
        streaming = null; // text after a tool call starts a new bubble
        toolCards.set(String(m.callId), toolCard(m.tool, m.args));
        return;
      case 'chat.tool_result': {
        const card = toolCards.get(String(m.callId)) ?? toolCard(m.tool ?? 'tool', undefined);
        finishToolCard(card, m);
        follower.change(() => images.attach(card, m.images));
        return;
      }
      case 'image.data': {
        follower.change(() => images.receive(m));
        return;
      }
      case 'chat.done': {
        // chat.done.text is ALL of the turn's text: replace the streamed bubbles with it (3).
        follower.change(() => {
          for (const el of log.querySelectorAll('.msg.assistant.turn-live')) el.remove();
          if (m.text) log.append(assistantRow(m.text).el);
        });
        streaming = null;
        setBusy(false);
        return;
      }
      case 'chat.error':
        streaming = null;
        addRow('error', m.message ?? t('turnFailed'));
        setBusy(false);
        return;
      case 'chat.replaced':
        follower.change(() => turns.replaced(m));
        return;
      case 'chat.queued':
        status.textContent = t('statusQueued', m.position ?? '?');
        return;
      case 'event.activity':
        if (m.event === 'status.thinking') {
          setBusy(true);
          status.textContent = t('statusThinking');
        } else if (m.event === 'status.idle' || m.event === 'status.error') setBusy(false);
        else if (m.event === 'tool_start') status.textContent = m.tool ? t('statusRunningTool', m.tool) : t('statusRunningSomeTool');
        else if (m.event === 'llm_call_start') status.textContent = t('statusThinking');
        else if (m.event === 'reasoning' && m.text) status.textContent = brief(m.text, 160);
        return;
      case 'usage':
        usageLine.textContent = t('usageLine', m.inputTokens ?? 0, m.outputTokens ?? 0, m.totalTokens ?? 0);
        return;
      case 'approval.request':
        showPrompt(approvalCard(m, sessionId, promptHooks));
        return;
      case 'clients.list':
        clients.update(m.clients);
        return;
      case 'user.ask':
        showPrompt(askCard(m, sessionId, promptHooks));
        return;
      case 'chat.list.result':
        chats.render(Array.isArray(m.chats) ? m.chats : []);
        return;
      case 'chat.history.result': {
        // Results are broadcast to every panel: take only the ones this panel asked for.
        const wanted = historyWanted.get(m.id);
        const purpose = wanted?.shift();
        if (wanted && !wanted.length) historyWanted.delete(m.id);
        if (purpose === 'export') chats.exportPage(m);
        else if (purpose && m.id === sessionId) renderHistory(m, purpose);
        return;
      }
      case 'chat.delete.result':
        if (!m.ok) showNotice(t('noticeDeleteFailed'));
        port.send({ type: 'chat.list' });
        return;
      case 'error':
        showNotice(`${m.code}: ${m.message ?? ''}`);
        return;
      default:
        return;
    }
  }

  // ---- outbound -------------------------------------------------------------------------------------

  /**
   * Send the composer's text (or `again`, a regenerated message) as a new turn; with `replaces`
   * (regenerate) or an edit in progress, it replaces the chat's last turn.
   * @param {string} [again] @param {string} [replaces]
   */
  function send(again, replaces) {
    const text = (again ?? input.value).trim();
    if (!text || busy) return;
    if (connState !== 'ready') showNotice(t('noticeNotConnectedYet'));
    turnId = `t-${shortId()}`;
    const edited = again === undefined ? turns.takeEditing() : null;
    const replacing = replaces ?? edited;
    port.send(replacing ? { type: 'chat.send', sessionId, text, turnId, replaces: replacing } : { type: 'chat.send', sessionId, text, turnId });
    turns.started(turnId, text);
    addRow('user', text);
    follower.toBottom(); // the reader's own message: show it and what answers it
    streaming = null;
    if (again === undefined) input.value = '';
    setBusy(true);
  }

  function stop() {
    if (!busy) return;
    port.send(turnId ? { type: 'chat.cancel', sessionId, turnId } : { type: 'chat.cancel', sessionId });
    status.textContent = t('statusStopping');
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    send();
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  root.ownerDocument.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && busy) {
      e.preventDefault();
      stop();
    }
  });
  stopButton.addEventListener('click', stop);
  log.addEventListener('scroll', () => follower.scrolled(), { passive: true });
  newMessages.addEventListener('click', () => follower.toBottom());
  newButton.addEventListener('click', () => {
    void switchSession(`${opts.prefix}-${shortId()}`);
    input.focus();
  });
  chatsButton.addEventListener('click', () => {
    chatList.hidden = !chatList.hidden;
    chatsButton.setAttribute('aria-expanded', String(!chatList.hidden));
    if (!chatList.hidden) port.send({ type: 'chat.list' });
  });
  modelSelect.addEventListener('change', () => port.send({ type: 'models.set', id: modelSelect.value }));

  port.connect();
  requestHistory(sessionId, 'open');
  input.focus();
  return {
    get sessionId() {
      return sessionId;
    },
    port,
  };
}
