// @ts-check
/**
 * ScrollFollower: the chat log follows new content only while the reader is at the bottom.
 *
 * Rules:
 *  - A change to the log (a message, a streamed chunk, a tool card, a prompt) keeps the view at
 *    the bottom if it was at the bottom (within `slack` px) just before the change. The decision
 *    is taken from the geometry before the change, not from a remembered flag, so a scroll the
 *    reader made a moment ago — whose scroll event has not been dispatched yet — still counts.
 *  - Otherwise the view stays where it is and the log is marked "unseen" (the page shows a
 *    "new messages" pill).
 *  - Reaching the bottom by scrolling clears "unseen"; so does toBottom() (the pill, sending a
 *    message, opening a chat).
 *  - Older history added above (prepend) keeps what the reader sees in place.
 *
 * Pure: it reads and sets scrollTop/scrollHeight/clientHeight of any object, so node tests drive
 * it with a plain one.
 */

/** @typedef {{scrollTop: number, readonly scrollHeight: number, readonly clientHeight: number}} ScrollBox */

export const SLACK_PX = 24;

export class ScrollFollower {
  /**
   * @param {ScrollBox} box
   * @param {{slack?: number, onUnseen?: (unseen: boolean) => void}} [opts]
   */
  constructor(box, opts = {}) {
    this.box = box;
    this.slack = opts.slack ?? SLACK_PX;
    this.onUnseen = opts.onUnseen ?? (() => {});
    this.unseen = false;
  }

  /** Whether the view shows the end of the content (within the slack). */
  atBottom() {
    const { scrollTop, scrollHeight, clientHeight } = this.box;
    return scrollHeight - clientHeight - scrollTop <= this.slack;
  }

  /**
   * Change the content with `mutate`; follow it down if the view was at the bottom.
   * @param {() => void} mutate
   */
  change(mutate) {
    const follow = this.atBottom();
    mutate();
    if (follow) this.toBottom();
    else this.setUnseen(true);
  }

  /**
   * Add content above what the reader sees (older history) without moving it on screen.
   * @param {() => void} mutate
   */
  prepend(mutate) {
    const fromBottom = this.box.scrollHeight - this.box.scrollTop;
    mutate();
    this.box.scrollTop = this.box.scrollHeight - fromBottom;
  }

  /** The reader scrolled (the log's scroll event). */
  scrolled() {
    if (this.atBottom()) this.setUnseen(false);
  }

  /** Show the newest content. */
  toBottom() {
    this.box.scrollTop = this.box.scrollHeight;
    this.setUnseen(false);
  }

  /** @param {boolean} unseen */
  setUnseen(unseen) {
    if (this.unseen === unseen) return;
    this.unseen = unseen;
    this.onUnseen(unseen);
  }
}
