// @ts-check
/**
 * Export a chat as Markdown (pure: node tests run it; download.js saves the result).
 *
 *   HistoryCollector  fetches a chat's whole history with `chat.history` (protocol.md 2 and 4):
 *                     v2 pages backwards with `before` (the oldest user row's timestamp) and
 *                     `limit` while `hasMore`; a v1 host sends everything it can in one answer.
 *   chatToMarkdown    the rows as a Markdown document: each turn is the user's words, the tools
 *                     it used folded in one <details> block, then the answer.
 *   exportFileName    browy-<title>-<date>.md
 */

import { t } from './i18n.js';

/** @typedef {{role: string, text?: string, name?: string, ok?: boolean, summary?: string, timestamp?: number}} HistoryRow */
/** @typedef {{type: 'chat.history', id: string, limit: number, before?: number}} HistoryRequest */

export const PAGE_TURNS = 50;
export const MAX_PAGES = 200;

/**
 * The row the host puts first when it left older rows out of a page to stay under 1 MiB
 * (protocol.md 5; actors/store/chat_views.py `_marker`): "(12 older messages not shown)".
 * @param {HistoryRow} row
 */
export function isOmissionMarker(row) {
  return row.role === 'assistant' && row.timestamp === undefined && /^\(\d+ older messages? not shown\)$/.test(row.text ?? '');
}

export class HistoryCollector {
  /**
   * @param {string} id the chat
   * @param {{pageTurns?: number, maxPages?: number}} [opts]
   */
  constructor(id, opts = {}) {
    this.id = id;
    this.pageTurns = opts.pageTurns ?? PAGE_TURNS;
    this.maxPages = opts.maxPages ?? MAX_PAGES;
    /** @type {HistoryRow[][]} newest page last */
    this.pages = [];
    /** @type {number | undefined} */
    this.before = undefined;
    this.done = false;
  }

  /** @returns {HistoryRequest} */
  firstRequest() {
    return { type: 'chat.history', id: this.id, limit: this.pageTurns };
  }

  /**
   * Take one `chat.history.result` for this chat.
   * @param {{messages?: HistoryRow[], hasMore?: boolean | null}} result
   * @returns {HistoryRequest | null} the next request, or null when the history is complete
   */
  accept(result) {
    const rows = Array.isArray(result.messages) ? result.messages : [];
    const oldest = rows.find((r) => r.role === 'user' && typeof r.timestamp === 'number')?.timestamp;
    const more =
      result.hasMore === true &&
      oldest !== undefined &&
      (this.before === undefined || oldest < this.before) && // the pages must move back in time
      this.pages.length + 1 < this.maxPages;
    // Rows the host left out of this page come with the next one: drop its marker then.
    this.pages.unshift(more && rows[0] && isOmissionMarker(rows[0]) ? rows.slice(1) : rows);
    if (!more) {
      this.done = true;
      return null;
    }
    this.before = oldest;
    return { type: 'chat.history', id: this.id, limit: this.pageTurns, before: oldest };
  }

  /** @returns {HistoryRow[]} every row collected, oldest first */
  rows() {
    return this.pages.flat();
  }
}

/** @param {string} s text for inside an HTML block (the <details> of tools) */
function escapeHtml(s) {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** @param {string} s */
function oneLine(s) {
  return s.replace(/\s+/g, ' ').trim();
}

/**
 * The tools of one turn, folded.
 * @param {HistoryRow[]} tools
 * @returns {string[]} lines
 */
function toolsBlock(tools) {
  const failed = tools.filter((r) => !r.ok).length;
  const summary = failed ? t('exportToolsUsedFailed', tools.length, failed) : t('exportToolsUsed', tools.length);
  const lines = ['<details>', `<summary>${escapeHtml(summary)}</summary>`, ''];
  for (const r of tools) {
    const outcome = r.ok ? t('outcomeOk') : t('outcomeError');
    const detail = r.summary ? ` — ${escapeHtml(oneLine(r.summary))}` : '';
    lines.push(`- <code>${escapeHtml(r.name ?? 'tool')}</code> — ${escapeHtml(outcome)}${detail}`);
  }
  lines.push('', '</details>', '');
  return lines;
}

/**
 * A chat as a Markdown document.
 * @param {{title: string, id: string, rows: HistoryRow[], exportedAt: Date, formatTime?: (ms: number) => string}} chat
 * @returns {string}
 */
export function chatToMarkdown(chat) {
  const when = chat.formatTime ?? ((/** @type {number} */ ms) => new Date(ms).toISOString().replace('T', ' ').slice(0, 16) + ' UTC');
  const lines = [`# ${oneLine(chat.title) || chat.id}`, '', `_${t('exportByline', chat.id, when(chat.exportedAt.getTime()))}_`, ''];
  /** @param {string | undefined} text a paragraph (or more), then a blank line; nothing if empty */
  const para = (text) => {
    const body = (text ?? '').trim();
    if (body) lines.push(body, '');
  };
  /** @type {HistoryRow[]} */
  let tools = [];
  let turns = 0;
  const flushTools = () => {
    if (tools.length) lines.push(...toolsBlock(tools));
    tools = [];
  };
  for (const row of chat.rows) {
    if (row.role === 'tool') {
      tools.push(row);
      continue;
    }
    if (row.role === 'user') {
      flushTools();
      if (turns++) lines.push('---', '');
      const time = typeof row.timestamp === 'number' ? ` · ${when(row.timestamp)}` : '';
      lines.push(`### ${t('exportYou')}${time}`, '');
      para(row.text);
    } else if (row.role === 'assistant') {
      if (isOmissionMarker(row)) {
        para(`_${(row.text ?? '').trim()}_`);
        continue;
      }
      flushTools();
      lines.push(`### ${t('exportAssistant')}`, '');
      para(row.text);
    }
  }
  flushTools();
  return lines.join('\n').trimEnd() + '\n';
}

/**
 * A file name for the export: browy-<title as a slug>-<YYYY-MM-DD>.md
 * @param {string} title
 * @param {Date} date
 */
export function exportFileName(title, date) {
  const slug = title
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  const day = date.toISOString().slice(0, 10);
  return `browy-${slug || 'chat'}-${day}.md`;
}
