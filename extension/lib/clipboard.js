// @ts-check
/**
 * Copy text to the clipboard from a click. The Clipboard API works in the side panel and the
 * options page (a focused extension page with a user gesture); inside the DevTools window the
 * panel is a frame that may not get clipboard-write, so a failed write falls back to
 * execCommand('copy') on a hidden textarea, which a user gesture allows there.
 */

/**
 * @param {string} text
 * @param {Document} [doc]
 * @returns {Promise<boolean>} whether the text was copied
 */
export async function copyText(text, doc = document) {
  try {
    await doc.defaultView?.navigator.clipboard.writeText(text);
    return true;
  } catch {
    return copyWithSelection(text, doc);
  }
}

/** @param {string} text @param {Document} doc */
function copyWithSelection(text, doc) {
  const previous = /** @type {HTMLElement | null} */ (doc.activeElement);
  const area = doc.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.className = 'offscreen';
  doc.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = doc.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  previous?.focus?.({ preventScroll: true });
  return ok;
}
