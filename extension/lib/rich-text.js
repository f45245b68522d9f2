// @ts-check
/**
 * Assistant text on screen: markdown -> sanitized HTML (markdown.js) -> code blocks highlighted
 * (highlight.js, whose output is sanitized again down to <span class>) -> a bar on each code block
 * with its language and a Copy button. Only this module assigns innerHTML, and only sanitized HTML.
 */

import DOMPurify from '../vendor/purify.es.mjs';
import { h } from './dom.js';
import { copyText } from './clipboard.js';
import { fenceLanguage, highlightCode } from './highlight.js';
import { t } from './i18n.js';
import { renderMarkdown } from './markdown.js';

/** highlight.js output may only be spans with classes. */
const HIGHLIGHT_PURIFY = { ALLOWED_TAGS: ['span'], ALLOWED_ATTR: ['class'] };

/**
 * A button that copies `getText()` and says so for a moment.
 * @param {() => string} getText
 * @param {{label: string, title: string, className?: string}} words
 * @returns {HTMLButtonElement}
 */
export function copyButton(getText, words) {
  const button = /** @type {HTMLButtonElement} */ (
    h('button', { type: 'button', class: `ghost copy ${words.className ?? ''}`.trim(), title: words.title, 'aria-label': words.title, text: words.label })
  );
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  button.addEventListener('click', async () => {
    const ok = await copyText(getText(), button.ownerDocument);
    button.textContent = ok ? t('copied') : t('copyFailed');
    button.dataset.copied = String(ok);
    clearTimeout(timer);
    timer = setTimeout(() => {
      button.textContent = words.label;
      delete button.dataset.copied;
    }, 1500);
  });
  return button;
}

/**
 * Highlight one `pre > code` block and give it a bar with its language and a Copy button.
 * @param {HTMLElement} code
 */
function decorateCodeBlock(code) {
  const pre = /** @type {HTMLElement} */ (code.parentElement);
  const language = fenceLanguage(code.className);
  const source = code.textContent ?? '';
  const highlighted = highlightCode(source, language);
  if (highlighted) {
    code.innerHTML = /** @type {string} */ (DOMPurify.sanitize(highlighted.html, HIGHLIGHT_PURIFY)); // sanitized
    code.classList.add('hljs');
  }
  const bar = h(
    'div',
    { class: 'code-bar' },
    h('span', { class: 'code-lang', text: language }),
    copyButton(() => source, { label: t('copyButton'), title: t('copyCodeTitle') }),
  );
  const block = h('div', { class: 'code-block' }, bar);
  pre.replaceWith(block);
  block.append(pre);
}

/**
 * Render `markdown` into `el`, replacing its content.
 * @param {HTMLElement} el
 * @param {string} markdown
 */
export function renderRich(el, markdown) {
  el.innerHTML = renderMarkdown(markdown); // sanitized (markdown.js)
  for (const code of el.querySelectorAll('pre > code')) decorateCodeBlock(/** @type {HTMLElement} */ (code));
}
