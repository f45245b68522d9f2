// @ts-check
/**
 * The chat log's scroll rules (lib/scroll-follow.js), on a plain object that behaves like a
 * scrolling element: scrollTop is clamped to [0, scrollHeight - clientHeight].
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScrollFollower } from '../lib/scroll-follow.js';

class Box {
  constructor(clientHeight = 500, scrollHeight = 500) {
    this.clientHeight = clientHeight;
    this.scrollHeight = scrollHeight;
    this.top = 0;
  }
  get scrollTop() {
    return this.top;
  }
  set scrollTop(v) {
    this.top = Math.max(0, Math.min(v, this.scrollHeight - this.clientHeight));
  }
  get bottomGap() {
    return this.scrollHeight - this.clientHeight - this.top;
  }
}

function setup() {
  const box = new Box();
  /** @type {boolean[]} */
  const pill = [];
  const follower = new ScrollFollower(box, { onUnseen: (u) => pill.push(u) });
  /** @param {number} px */
  const grow = (px) => follower.change(() => void (box.scrollHeight += px));
  return { box, pill, follower, grow };
}

test('at the bottom, new content keeps the view at the bottom', () => {
  const { box, pill, grow } = setup();
  for (let i = 0; i < 10; i += 1) {
    grow(300);
    assert.equal(box.bottomGap, 0);
  }
  assert.deepEqual(pill, []);
});

test('scrolled up to read, new content does not move the view and raises the pill once', () => {
  const { box, pill, follower, grow } = setup();
  grow(2000);
  box.scrollTop = 700; // the reader scrolls up
  follower.scrolled();
  for (let i = 0; i < 5; i += 1) grow(250);
  assert.equal(box.scrollTop, 700);
  assert.deepEqual(pill, [true]);
  assert.equal(follower.unseen, true);
});

test('the decision uses the geometry before the change, even before the scroll event came', () => {
  const { box, grow } = setup();
  grow(2000);
  box.scrollTop = 100; // scrolled, but the scroll event has not been dispatched yet
  grow(400);
  assert.equal(box.scrollTop, 100);
});

test('a few pixels short of the bottom still counts as the bottom', () => {
  const { box, grow } = setup();
  grow(2000);
  box.scrollTop = box.scrollHeight - box.clientHeight - 20;
  grow(100);
  assert.equal(box.bottomGap, 0);
});

test('the pill jumps to the bottom and following resumes', () => {
  const { box, pill, follower, grow } = setup();
  grow(2000);
  box.scrollTop = 0;
  grow(100);
  follower.toBottom(); // the pill's click
  assert.equal(box.bottomGap, 0);
  assert.deepEqual(pill, [true, false]);
  grow(300);
  assert.equal(box.bottomGap, 0);
});

test('scrolling back down to the bottom by hand clears the pill', () => {
  const { box, pill, follower, grow } = setup();
  grow(2000);
  box.scrollTop = 0;
  grow(100);
  box.scrollTop = 1e9;
  follower.scrolled();
  assert.deepEqual(pill, [true, false]);
  follower.scrolled();
  assert.deepEqual(pill, [true, false], 'told once per change');
});

test('older history added above keeps what the reader sees in place', () => {
  const { box, follower, grow } = setup();
  grow(1500);
  box.scrollTop = 300;
  const before = box.scrollHeight - box.scrollTop;
  follower.prepend(() => void (box.scrollHeight += 800));
  assert.equal(box.scrollHeight - box.scrollTop, before);
  assert.equal(box.scrollTop, 1100);
});

test('content that does not fill the view counts as being at the bottom', () => {
  const { box, pill, grow } = setup();
  grow(-100); // shorter than the view: nothing to scroll
  grow(50);
  assert.equal(box.scrollTop, 0);
  assert.deepEqual(pill, []);
});
