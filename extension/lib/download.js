// @ts-check
/**
 * Save text as a file from an extension page: a Blob behind an <a download> that is clicked.
 * No permission is needed (chrome.downloads would be one), and the user's download settings apply.
 */

/**
 * @param {string} filename
 * @param {string} text
 * @param {{type?: string, doc?: Document}} [opts]
 */
export function downloadText(filename, text, opts = {}) {
  const doc = opts.doc ?? document;
  const url = URL.createObjectURL(new Blob([text], { type: opts.type ?? 'text/markdown;charset=utf-8' }));
  const a = doc.createElement('a');
  a.href = url;
  a.download = filename;
  a.hidden = true;
  doc.body.append(a);
  a.click();
  a.remove();
  // The download has taken the blob by the next task; revoking at once can cancel it in Chrome.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
