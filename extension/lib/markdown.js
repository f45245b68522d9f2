// @ts-check
/**
 * Markdown -> sanitized HTML for assistant text, the source of every innerHTML in the UI
 * (rich-text.js assigns it, then highlights code blocks in the sanitized result): `marked`
 * renders, DOMPurify sanitizes (no scripts, no event handlers, no forms, no inline styles); links
 * open in a new tab without an opener. Remote images are blocked anyway by the pages' CSP
 * (img-src 'self' data:).
 */

import { marked } from '../vendor/marked.esm.js';
import DOMPurify from '../vendor/purify.es.mjs';

let hooked = false;

/** @param {string} text @returns {string} sanitized HTML */
export function renderMarkdown(text) {
  if (!hooked) {
    DOMPurify.addHook('afterSanitizeAttributes', (node) => {
      if (node.tagName === 'A') {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      }
    });
    hooked = true;
  }
  const html = /** @type {string} */ (marked.parse(text ?? '', { async: false, gfm: true, breaks: true }));
  return DOMPurify.sanitize(html, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe'],
    FORBID_ATTR: ['style'],
  });
}
