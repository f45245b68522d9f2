// @ts-check
/**
 * DeliberateActivation: decides whether a click on a prompt button (Allow, Deny, Yes, …) was a
 * deliberate choice. Pure: it sees plain event fields and a clock, so node tests drive it.
 *
 * Why: the composer stays usable during a turn. If a prompt took keyboard focus, or a key meant
 * for the composer could reach a prompt button, an Enter or Space typed a moment too late would
 * approve an action the user never read. Browsers guard their own permission prompts the same
 * way (an input delay before the buttons work; Firefox's security.dialog_enable_delay).
 *
 * The rules, in order:
 *  1. Untrusted (scripted) clicks never count.
 *  2. Nothing counts until `armMs` after the prompt was shown: a click or key already on its way
 *     when the card appeared lands on nothing (the page shows the buttons disabled meanwhile).
 *  3. A pointer click (`detail >= 1`) counts.
 *  4. A keyboard click (`detail === 0`: Enter fires it on keydown, Space on keyup) counts only
 *     when a fresh — not auto-repeated — Enter or Space keydown landed on that very button after
 *     arming. A key pressed in the composer, or held down from there, never qualifies, even if
 *     focus reached the button in the meantime. The page never moves focus to a button itself:
 *     it focuses the card, so reaching a button with the keyboard takes a Tab.
 */

/** @typedef {{key: string, repeat?: boolean, isComposing?: boolean, target: unknown}} KeyLike */
/** @typedef {{detail: number, isTrusted: boolean, target?: unknown}} ClickLike */

export const ARM_MS = 500;

export class DeliberateActivation {
  /**
   * @param {{now?: () => number, armMs?: number}} [opts]
   */
  constructor(opts = {}) {
    this.now = opts.now ?? (() => performance.now());
    this.armMs = opts.armMs ?? ARM_MS;
    this.shownAt = this.now();
    /** @type {unknown} the button a fresh Enter/Space keydown landed on */
    this.keyTarget = null;
  }

  /** The prompt is (again) on screen: start the arming delay over. */
  shown() {
    this.shownAt = this.now();
    this.keyTarget = null;
  }

  /** Whether the arming delay is over. */
  armed() {
    return this.now() - this.shownAt >= this.armMs;
  }

  /** Milliseconds until armed (0 when armed). */
  remainingMs() {
    return Math.max(0, this.armMs - (this.now() - this.shownAt));
  }

  /**
   * Every keydown inside the prompt goes here (any target).
   * @param {KeyLike} e
   * @param {unknown} button the prompt button the event's target is, or null
   */
  keydown(e, button) {
    if (e.repeat) return; // a held key neither qualifies nor cancels a key that did
    const activating = e.key === 'Enter' || e.key === ' ';
    if (activating && button && e.target === button && !e.isComposing && this.armed()) {
      this.keyTarget = button;
    } else {
      this.keyTarget = null;
    }
  }

  /**
   * Enter in a prompt's own text field: does it submit? Only a fresh Enter typed in that field
   * once armed (the page never focuses the field itself).
   * @param {KeyLike} e
   * @param {unknown} field
   */
  submits(e, field) {
    return e.key === 'Enter' && e.target === field && !e.repeat && !e.isComposing && this.armed();
  }

  /**
   * A click on `button`: does it count? A keyboard click uses up the keydown that allowed it.
   * @param {ClickLike} e
   * @param {unknown} button
   */
  accept(e, button) {
    if (!e.isTrusted || !this.armed()) {
      this.keyTarget = null;
      return false;
    }
    if (e.detail >= 1) return true;
    const ok = this.keyTarget === button;
    this.keyTarget = null;
    return ok;
  }
}
