// @ts-check
/**
 * The list of saved chats (chat.list -> chat.list.result) with, per chat: open, export as
 * Markdown, delete. An export fetches the chat's whole history through the panel's own
 * chat.history requests (export.js HistoryCollector) and downloads a .md file (download.js).
 */

import { h } from './dom.js';
import { downloadText } from './download.js';
import { HistoryCollector, chatToMarkdown, exportFileName } from './export.js';
import { t } from './i18n.js';

/** @typedef {import('./export.js').HistoryRequest} HistoryRequest */

/** No page of an export for this long: the host is not answering. */
export const EXPORT_TIMEOUT_MS = 30_000;

/**
 * @typedef {object} ChatListHooks
 * @property {() => string} currentId                   the panel's chat
 * @property {(id: string) => void} open                 open a chat in the panel
 * @property {(id: string) => void} remove               send chat.delete
 * @property {(req: HistoryRequest) => void} fetchPage   send a chat.history for an export
 * @property {(text: string) => void} notify             show a notice
 */

export class ChatList {
  /** @param {ChatListHooks} hooks */
  constructor(hooks) {
    this.hooks = hooks;
    this.el = h('nav', { class: 'chat-list', hidden: true, 'aria-label': t('chatsButton') });
    /** @type {Map<string, {collector: HistoryCollector, title: string, timer: ReturnType<typeof setTimeout> | undefined}>} */
    this.exports = new Map();
  }

  /** @param {any[]} chats chat.list.result's chats, newest first */
  render(chats) {
    this.el.replaceChildren();
    if (!chats.length) this.el.append(h('div', { class: 'muted', text: t('noSavedChats') }));
    for (const c of chats) {
      const title = c.summary || c.id;
      const when = new Date(c.modifiedTime ?? c.startTime ?? 0).toLocaleString();
      this.el.append(
        h(
          'div',
          { class: `chat-item${c.id === this.hooks.currentId() ? ' current' : ''}` },
          h('button', { type: 'button', class: 'chat-open', title: c.id, onclick: () => this.hooks.open(c.id) }, h('span', { text: title }), h('small', { text: when })),
          h('button', {
            type: 'button',
            class: 'ghost chat-export',
            'data-chat-id': c.id,
            title: t('exportLabel', title),
            'aria-label': t('exportLabel', title),
            text: t('exportButton'),
            disabled: this.exports.has(c.id),
            onclick: () => this.startExport(c.id, title),
          }),
          h('button', { type: 'button', class: 'ghost danger', title: t('deleteChatTitle'), 'aria-label': t('deleteChatLabel', title), text: '×', onclick: () => this.hooks.remove(c.id) }),
        ),
      );
    }
  }

  /** @param {string} id @param {string} title */
  startExport(id, title) {
    if (this.exports.has(id)) return;
    const collector = new HistoryCollector(id);
    this.exports.set(id, { collector, title, timer: undefined });
    this.setBusy(id, true);
    this.request(id, collector.firstRequest());
  }

  /**
   * A chat.history.result this panel asked for on behalf of an export.
   * @param {{type: string, id?: any, messages?: any, hasMore?: any}} result a chat.history.result
   */
  exportPage(result) {
    const job = this.exports.get(result.id);
    if (!job) return;
    const next = job.collector.accept(result);
    if (next) {
      this.request(result.id, next);
      return;
    }
    this.finish(result.id);
    const now = new Date();
    const text = chatToMarkdown({ title: job.title, id: result.id, rows: job.collector.rows(), exportedAt: now, formatTime: (ms) => new Date(ms).toLocaleString() });
    downloadText(exportFileName(job.title, now), text, { doc: this.el.ownerDocument });
  }

  /** The connection went away: the exports in progress get no more pages. */
  failAll() {
    if (!this.exports.size) return;
    for (const id of [...this.exports.keys()]) this.finish(id);
    this.hooks.notify(t('exportFailed'));
  }

  /** @param {string} id @param {HistoryRequest} req */
  request(id, req) {
    const job = this.exports.get(id);
    if (!job) return;
    clearTimeout(job.timer);
    job.timer = setTimeout(() => {
      this.finish(id);
      this.hooks.notify(t('exportFailed'));
    }, EXPORT_TIMEOUT_MS);
    this.hooks.fetchPage(req);
  }

  /** @param {string} id */
  finish(id) {
    clearTimeout(this.exports.get(id)?.timer);
    this.exports.delete(id);
    this.setBusy(id, false);
  }

  /** @param {string} id @param {boolean} busy */
  setBusy(id, busy) {
    for (const b of this.el.querySelectorAll('button.chat-export')) {
      if (/** @type {HTMLElement} */ (b).dataset.chatId === id) /** @type {HTMLButtonElement} */ (b).disabled = busy;
    }
  }
}
