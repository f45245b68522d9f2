// @ts-check
/**
 * Images a tool produced (a screenshot), shown inline in its tool card (protocol.md 4).
 *
 * A v2 `chat.tool_result` carries `images: {imageId, mime, bytes}[]`; the panel asks for each
 * (`image.get`) and the host answers with `image.data` pieces, each under the 1 MiB frame limit,
 * which are put together here into a `data:` URL. The thumbnail opens the full image in a dialog
 * (Escape or a click closes it). An image the host no longer keeps (`missing`) says so.
 */

import { h } from './dom.js';
import { t } from './i18n.js';

/**
 * Put `image.data` pieces together. Pure: no DOM (tested in node).
 */
export class ImageAssembler {
  constructor() {
    /** @type {Map<string, {mime: string, parts: string[], got: number}>} */
    this.pending = new Map();
  }

  /**
   * One `image.data` piece; returns the whole image's data URL once every piece came, `null`
   * while some are missing, and `''` when the host no longer has it.
   * @param {{imageId: string, mime?: string, index?: number, count?: number, data?: string, missing?: boolean}} m
   * @returns {string | null}
   */
  add(m) {
    if (m.missing) {
      this.pending.delete(m.imageId);
      return '';
    }
    const count = Math.max(1, Number(m.count ?? 1));
    let entry = this.pending.get(m.imageId);
    if (!entry) {
      entry = { mime: String(m.mime ?? 'image/png'), parts: new Array(count).fill(undefined), got: 0 };
      this.pending.set(m.imageId, entry);
    }
    const index = Number(m.index ?? 0);
    if (index < 0 || index >= entry.parts.length || entry.parts[index] !== undefined) return null;
    entry.parts[index] = String(m.data ?? '');
    entry.got += 1;
    if (entry.got < entry.parts.length) return null;
    this.pending.delete(m.imageId);
    return `data:${entry.mime};base64,${entry.parts.join('')}`;
  }
}

/**
 * The images of the panel: placeholders in tool cards, filled as their pieces arrive.
 */
export class InlineImages {
  /** @param {(m: {type: string, [k: string]: any}) => void} send */
  constructor(send) {
    this.send = send;
    this.assembler = new ImageAssembler();
    /** @type {Map<string, HTMLElement>} */
    this.slots = new Map();
  }

  /**
   * Show the images of a tool result under its card and ask for them.
   * @param {HTMLElement} card
   * @param {{imageId: string, mime: string}[] | undefined} images
   */
  attach(card, images) {
    if (!Array.isArray(images) || !images.length) return;
    const strip = h('div', { class: 'tool-images' });
    for (const img of images) {
      const slot = h('button', { type: 'button', class: 'thumb loading', 'data-image': img.imageId, title: t('imageOpen'), text: t('imageLoading') });
      this.slots.set(img.imageId, slot);
      strip.append(slot);
      this.send({ type: 'image.get', imageId: img.imageId });
    }
    card.after(strip); // outside the folded card: the picture is seen without opening it
  }

  /**
   * An `image.data` piece arrived.
   * @param {any} m
   */
  receive(m) {
    const url = this.assembler.add(m);
    if (url === null) return;
    const slot = this.slots.get(m.imageId);
    this.slots.delete(m.imageId);
    if (!slot) return;
    slot.classList.remove('loading');
    if (!url) {
      slot.textContent = t('imageGone');
      slot.setAttribute('disabled', '');
      return;
    }
    const thumb = h('img', { src: url, alt: t('imageAlt') });
    slot.replaceChildren(thumb);
    slot.addEventListener('click', () => openLarge(slot, url));
  }
}

/**
 * The full image in a modal dialog: Escape (the dialog's own) or a click closes it.
 * @param {HTMLElement} near
 * @param {string} url
 */
function openLarge(near, url) {
  const doc = near.ownerDocument;
  const dialog = /** @type {HTMLDialogElement} */ (h('dialog', { class: 'image-large', 'aria-label': t('imageAlt') }, h('img', { src: url, alt: t('imageAlt') })));
  dialog.addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => {
    dialog.remove();
    near.focus();
  });
  doc.body.append(dialog);
  dialog.showModal();
}
