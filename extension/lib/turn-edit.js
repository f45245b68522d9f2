// @ts-check
/**
 * Regenerate the last answer, or edit and resend the last message (protocol.md 4:
 * `chat.send{replaces}` -> `chat.replaced{turnId, pageChanged}`).
 *
 * Every element the log gets while a turn is current is tagged with that turn's id
 * (`data-turn`), and history rows with the turn their user row starts, so the replaced turn's
 * rows can be taken away when the host says it is gone. Only the chat's last turn, once it
 * ended, offers "Edit" (on its message) and "Regenerate" (on its answer). Nothing the replaced
 * turn did on a page is undone: when it changed a page, the panel says so.
 */

import { h } from './dom.js';
import { t } from './i18n.js';

/**
 * @typedef {object} TurnEditHooks
 * @property {HTMLElement} log
 * @property {(text: string, replaces: string) => void} resend   send `text` as a new turn replacing `replaces`
 * @property {(text: string) => void} edit                       put `text` in the composer to edit it
 * @property {(text: string) => void} notice
 */

export class TurnEditing {
  /** @param {TurnEditHooks} hooks */
  constructor(hooks) {
    this.hooks = hooks;
    /** @type {string | null} the turn whose rows are being added now */
    this.current = null;
    /** @type {{id: string, text: string} | null} the last turn, once it ended */
    this.last = null;
    /** @type {string | null} the turn the composer's text will replace */
    this.editing = null;
    this.observer = new MutationObserver((records) => this.tag(records));
    this.observer.observe(hooks.log, { childList: true });
  }

  /** @param {MutationRecord[]} records rows the log got while `current` was the turn */
  tag(records) {
    for (const r of records) {
      for (const node of r.addedNodes) {
        const el = /** @type {HTMLElement} */ (node);
        if (this.current && el.nodeType === 1 && !el.dataset.turn) el.dataset.turn = this.current;
      }
    }
  }

  /** Tag what was added so far (the observer reports later: before `current` changes). */
  flush() {
    this.tag(this.observer.takeRecords());
  }

  /**
   * A turn starts (its user row comes next).
   * @param {string} turnId @param {string} text
   */
  started(turnId, text) {
    this.flush();
    this.clearActions();
    this.current = turnId;
    this.pendingText = text;
  }

  /** The current turn ended: it is the last one; offer Edit and Regenerate on it. */
  ended() {
    if (!this.current) return;
    this.flush();
    this.last = { id: this.current, text: this.pendingText ?? '' };
    this.current = null;
    this.offer();
  }

  /**
   * History rows were shown: tag each with the turn its user row starts; the newest is the
   * last turn.
   * @param {HTMLElement[]} rows @param {{role: string, turnId?: string, text?: string}[]} data
   * @param {{newest: boolean}} o newest: these are the chat's newest rows (not an older page)
   */
  tagHistory(rows, data, o) {
    /** @type {string | null} */
    let turn = null;
    /** @type {{id: string, text: string} | null} */
    let last = null;
    rows.forEach((el, i) => {
      const r = data[i];
      if (r?.role === 'user' && r.turnId) {
        turn = r.turnId;
        last = { id: r.turnId, text: r.text ?? '' };
      }
      if (turn) el.dataset.turn = turn;
    });
    if (o.newest) {
      this.last = last;
      this.offer();
    }
  }

  clearActions() {
    for (const b of this.hooks.log.querySelectorAll('.turn-action')) b.remove();
  }

  offer() {
    this.clearActions();
    const last = this.last;
    if (!last) return;
    const rows = [...this.hooks.log.querySelectorAll(`[data-turn="${CSS.escape(last.id)}"]`)];
    const user = rows.find((el) => el.classList.contains('user'));
    const answer = [...rows].reverse().find((el) => el.classList.contains('assistant') || el.classList.contains('error'));
    user?.append(
      h('button', {
        type: 'button',
        class: 'ghost turn-action edit',
        text: t('editButton'),
        title: t('editTitle'),
        onclick: () => {
          this.editing = last.id;
          this.hooks.edit(last.text);
        },
      }),
    );
    answer?.append(
      h('button', {
        type: 'button',
        class: 'ghost turn-action regenerate',
        text: t('regenerateButton'),
        title: t('regenerateTitle'),
        onclick: () => this.hooks.resend(last.text, last.id),
      }),
    );
  }

  /**
   * The host dropped a turn: take its rows away; say so when it had changed a page.
   * @param {{turnId: string, pageChanged?: boolean}} m
   */
  replaced(m) {
    for (const el of this.hooks.log.querySelectorAll(`[data-turn="${CSS.escape(String(m.turnId))}"]`)) el.remove();
    if (this.last?.id === m.turnId) this.last = null;
    if (m.pageChanged) this.hooks.notice(t('replacedPageChanged'));
  }

  /** The turn the next send replaces (an edit in progress), then forgotten. */
  takeEditing() {
    const id = this.editing;
    this.editing = null;
    return id;
  }
}
