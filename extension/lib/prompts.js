// @ts-check
/**
 * The cards that ask the user something mid-turn (protocol.md section 4):
 *   approval.request -> approval.response{decision}   (approvalCard)
 *   user.ask         -> user.answer{value|cancelled}  (askCard)
 *
 * A card never takes focus away to one of its buttons or fields: the chat focuses the card itself
 * (focusPrompt), and every button goes through a DeliberateActivation guard (deliberate.js), so
 * an Enter or Space typed for the composer cannot answer it. The buttons are disabled for the
 * guard's arming delay; `data-armed` on the card says when they work.
 */

import { brief, h } from './dom.js';
import { DeliberateActivation } from './deliberate.js';
import { t } from './i18n.js';

/** @typedef {{type: string, [k: string]: any}} Msg */

/**
 * @typedef {object} PromptHooks
 * @property {(m: Msg) => void} send           sends the answer to the host
 * @property {(card: HTMLElement) => void} [settled]  the card was answered (give focus back)
 * @property {() => number} [now]
 * @property {number} [armMs]
 */

/** @type {[string, () => string, string][]} decision, its label, button class */
const DECISIONS = [
  ['allow', () => t('approvalAllowOnce'), 'primary'],
  ['allow_session', () => t('approvalAllowSession'), ''],
  ['allow_site', () => t('approvalAllowSite'), ''],
  ['deny', () => t('approvalDeny'), 'danger'],
];

/** @type {[string, () => string, string][]} the same four answers when an MCP client asks to use the browser (`tool: "mcp_client"`) */
const CLIENT_DECISIONS = [
  ['allow', () => t('approvalAllowOnce'), 'primary'],
  ['allow_session', () => t('mcpAllowSession'), ''],
  ['allow_site', () => t('mcpAllowAlways'), ''],
  ['deny', () => t('approvalDeny'), 'danger'],
];

/** @type {[string, () => string, string][]} one of the user's tabs for an MCP client: yes or no */
const TAB_DECISIONS = [
  ['allow', () => t('approvalAllowOnce'), 'primary'],
  ['deny', () => t('approvalDeny'), 'danger'],
];

/**
 * Wire `buttons` of `card` to a guard: clicks that are not deliberate are swallowed; the buttons
 * stay disabled until the guard is armed.
 * @param {HTMLElement} card
 * @param {DeliberateActivation} guard
 * @param {[HTMLButtonElement, () => void][]} buttons
 */
function guardButtons(card, guard, buttons) {
  const set = new Set(buttons.map(([b]) => b));
  card.addEventListener('keydown', (e) => guard.keydown(e, set.has(/** @type {any} */ (e.target)) ? e.target : null), true);
  for (const [button, choose] of buttons) {
    button.disabled = true;
    button.addEventListener('click', (e) => {
      if (!guard.accept(e, button)) {
        e.preventDefault();
        e.stopImmediatePropagation();
        return;
      }
      choose();
    });
  }
  const arm = () => {
    if (!guard.armed()) {
      setTimeout(arm, Math.max(10, guard.remainingMs()));
      return;
    }
    for (const [button] of buttons) button.disabled = false;
    card.dataset.armed = 'true';
  };
  card.dataset.armed = 'false';
  setTimeout(arm, guard.remainingMs());
}

/**
 * @param {HTMLElement} card
 * @param {string} text what the card says once answered
 * @param {PromptHooks} hooks
 */
function settle(card, text, hooks) {
  card.replaceChildren(h('div', { class: 'muted', text }));
  card.classList.add('answered');
  delete card.dataset.armed;
  hooks.settled?.(card);
}

/**
 * The approval card for an `approval.request`.
 * @param {Msg} m
 * @param {string} sessionId
 * @param {PromptHooks} hooks
 * @returns {HTMLElement}
 */
export function approvalCard(m, sessionId, hooks) {
  const guard = new DeliberateActivation({ now: hooks.now, armMs: hooks.armMs });
  const client = m.tool === 'mcp_client' || m.tool === 'mcp_tab' ? String(m.args?.client ?? '') : null;
  const heading =
    m.tool === 'mcp_tab' ? t('mcpTabTitle', client ?? '') : client !== null ? t('mcpClientTitle', client) : t('approvalTitle', m.tool ?? '');
  const title = h('div', { class: 'prompt-title', text: heading });
  const card = h(
    'section',
    { class: `prompt approval risk-${m.risk ?? 'unknown'}`, role: 'group', 'aria-label': t('approvalLabel'), tabindex: '-1' },
    title,
    h('div', { text: m.summary ?? '' }),
    m.origin ? h('div', { class: 'muted', text: t('approvalSite', m.origin) }) : null,
    client !== null ? null : h('pre', { class: 'tool-args', text: brief(m.args, 1000) }),
  );
  const row = h('div', { class: 'prompt-buttons' });
  /** @type {[HTMLButtonElement, () => void][]} */
  const buttons = [];
  const decisions = m.tool === 'mcp_tab' ? TAB_DECISIONS : client !== null ? CLIENT_DECISIONS : DECISIONS;
  for (const [decision, labelOf, cls] of decisions) {
    const label = labelOf();
    const button = /** @type {HTMLButtonElement} */ (h('button', { type: 'button', class: cls, 'data-decision': decision, text: label }));
    buttons.push([
      button,
      () => {
        hooks.send({ type: 'approval.response', sessionId, approvalId: m.approvalId, decision });
        settle(card, t('approvalAnswered', client ?? m.tool ?? '', label), hooks);
      },
    ]);
    row.append(button);
  }
  card.append(row);
  guardButtons(card, guard, buttons);
  return card;
}

/**
 * The card for a `user.ask` (the ask_user tool): confirm (Yes/No), choose (one button per
 * option) or input (a text field); Cancel always.
 * @param {Msg} m
 * @param {string} sessionId
 * @param {PromptHooks} hooks
 * @returns {HTMLElement}
 */
export function askCard(m, sessionId, hooks) {
  const guard = new DeliberateActivation({ now: hooks.now, armMs: hooks.armMs });
  const card = h(
    'section',
    { class: 'prompt ask', role: 'group', 'aria-label': t('askLabel'), tabindex: '-1' },
    h('div', { class: 'prompt-title', text: m.prompt ?? '' }),
  );
  /** @param {any} value @param {boolean} [cancelled] */
  const answer = (value, cancelled = false) => {
    hooks.send(cancelled ? { type: 'user.answer', sessionId, askId: m.askId, cancelled: true } : { type: 'user.answer', sessionId, askId: m.askId, value });
    settle(card, t('askAnswered', m.prompt ?? '', cancelled ? t('askCancelled') : brief(value, 200)), hooks);
  };
  /** @type {[HTMLButtonElement, () => void][]} */
  const buttons = [];
  /** @param {string} label @param {string} cls @param {() => void} choose */
  const button = (label, cls, choose) => {
    const b = /** @type {HTMLButtonElement} */ (h('button', { type: 'button', class: cls, text: label }));
    buttons.push([b, choose]);
    return b;
  };
  const row = h('div', { class: 'prompt-buttons' });
  if (m.kind === 'confirm') {
    row.append(button(t('askYes'), 'primary', () => answer(true)), button(t('askNo'), '', () => answer(false)));
  } else if (m.kind === 'choose' && Array.isArray(m.options)) {
    for (const o of m.options) row.append(button(o.label ?? String(o.value), o.value === m.defaultValue ? 'primary' : '', () => answer(o.value)));
  } else {
    const field = /** @type {HTMLInputElement} */ (h('input', { type: 'text', value: m.defaultValue ?? '', 'aria-label': m.prompt ?? t('askAnswer') }));
    field.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter') return;
      e.preventDefault();
      if (guard.submits(e, field)) answer(field.value);
    });
    card.append(field);
    row.append(button(t('askAnswer'), 'primary', () => answer(field.value)));
  }
  row.append(button(t('askCancel'), 'ghost', () => answer(undefined, true)));
  card.append(row);
  guardButtons(card, guard, buttons);
  return card;
}

/**
 * Give a freshly shown prompt the keyboard focus — the card itself, never one of its buttons —
 * without scrolling (the chat's scroll follower decides that).
 * @param {HTMLElement} card
 */
export function focusPrompt(card) {
  card.focus({ preventScroll: true });
}
