// @ts-check
/**
 * The approval prompt's guard (lib/deliberate.js): typing in the composer — Enter, Space, held
 * keys — never approves; only a real click or a fresh key on a focused, armed button does.
 * Events are plain objects with the fields the guard reads; the clock is a number we move.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeliberateActivation } from '../lib/deliberate.js';

const composer = { name: 'composer' };
const card = { name: 'card' };
const allow = { name: 'allow' };
const deny = { name: 'deny' };

function setup(armMs = 500) {
  const clock = { t: 1000 };
  const guard = new DeliberateActivation({ now: () => clock.t, armMs });
  return { clock, guard };
}

/** @param {string} key @param {any} target @param {Partial<import('../lib/deliberate.js').KeyLike>} [more] */
const key = (key, target, more = {}) => ({ key, target, repeat: false, isComposing: false, ...more });
/** A click the browser made from a key (detail 0). */
const keyClick = (/** @type {any} */ target) => ({ detail: 0, isTrusted: true, target });
/** A real mouse click. */
const mouseClick = (/** @type {any} */ target) => ({ detail: 1, isTrusted: true, target });

/**
 * What the guard sees for one key, given where focus is: keydown on the focused element (a
 * prompt button counts as `button` only when focus is on it); the browser's own click for Enter
 * (on keydown) or Space (on keyup) only when a button has focus.
 * @param {DeliberateActivation} guard @param {string} k @param {any} focused @param {boolean} [repeat]
 */
function press(guard, k, focused, repeat = false) {
  const onButton = focused === allow || focused === deny ? focused : null;
  guard.keydown(key(k, focused, { repeat }), onButton);
  if (onButton && (k === 'Enter' || k === ' ')) return guard.accept(keyClick(onButton), onButton);
  return false;
}

test('Enter and Space typed in the composer while the prompt appears never approve', () => {
  const { clock, guard } = setup();
  for (let i = 0; i < 40; i += 1) {
    clock.t += 50; // keys keep coming before, during and long after the arming delay
    assert.equal(press(guard, i % 2 ? 'Enter' : ' ', composer), false);
    assert.equal(press(guard, 'x', composer), false);
  }
});

test('a key pressed in the composer does not count when focus then reaches Allow before its click', () => {
  const { clock, guard } = setup();
  clock.t += 2000;
  guard.keydown(key('Enter', composer), null);
  // Focus moved to Allow between the keydown and the click the browser makes of it.
  assert.equal(guard.accept(keyClick(allow), allow), false);
  // Space: keydown in the composer, keyup (and its click) on Allow.
  guard.keydown(key(' ', composer), null);
  assert.equal(guard.accept(keyClick(allow), allow), false);
});

test('a held Enter or Space that started in the composer never approves when it reaches Allow', () => {
  const { clock, guard } = setup();
  clock.t += 2000;
  guard.keydown(key('Enter', composer), null);
  for (let i = 0; i < 10; i += 1) assert.equal(press(guard, 'Enter', allow, true), false);
  guard.keydown(key(' ', composer), null);
  for (let i = 0; i < 10; i += 1) assert.equal(press(guard, ' ', allow, true), false);
});

test('keys on the focused card (where the prompt puts focus) never approve', () => {
  const { clock, guard } = setup();
  for (const k of ['Enter', ' ', 'Enter', 'y']) {
    clock.t += 400;
    assert.equal(press(guard, k, card), false);
    assert.equal(guard.accept(keyClick(allow), allow), false);
  }
});

test('nothing counts before the prompt is armed, not even a real click or a fresh key on Allow', () => {
  const { clock, guard } = setup(500);
  clock.t += 499;
  assert.equal(guard.accept(mouseClick(allow), allow), false);
  assert.equal(press(guard, 'Enter', allow), false);
  assert.equal(guard.remainingMs(), 1);
  clock.t += 1;
  assert.ok(guard.armed());
  assert.equal(guard.remainingMs(), 0);
});

test('a keydown on Allow before arming does not carry over to a click after it', () => {
  const { clock, guard } = setup(500);
  clock.t += 100;
  guard.keydown(key('Enter', allow), allow);
  clock.t += 1000;
  assert.equal(guard.accept(keyClick(allow), allow), false);
});

test('a real click on an armed prompt counts', () => {
  const { clock, guard } = setup();
  clock.t += 500;
  assert.equal(guard.accept(mouseClick(allow), allow), true);
});

test('a fresh Enter or Space on a focused, armed button counts once', () => {
  const { clock, guard } = setup();
  clock.t += 600;
  assert.equal(press(guard, 'Enter', allow), true);
  // The keydown is used up: a second click from no new key does not count.
  assert.equal(guard.accept(keyClick(allow), allow), false);
  assert.equal(press(guard, ' ', deny), true);
});

test('a key on one button does not let a keyboard click on another count', () => {
  const { clock, guard } = setup();
  clock.t += 600;
  guard.keydown(key('Enter', deny), deny);
  assert.equal(guard.accept(keyClick(allow), allow), false);
});

test('scripted (untrusted) clicks never count', () => {
  const { clock, guard } = setup();
  clock.t += 600;
  assert.equal(guard.accept({ detail: 1, isTrusted: false }, allow), false);
  guard.keydown(key('Enter', allow), allow);
  assert.equal(guard.accept({ detail: 0, isTrusted: false }, allow), false);
});

test('an IME composition Enter on a button does not count', () => {
  const { clock, guard } = setup();
  clock.t += 600;
  guard.keydown(key('Enter', allow, { isComposing: true }), allow);
  assert.equal(guard.accept(keyClick(allow), allow), false);
});

test('Enter submits a prompt field only when typed fresh in that field after arming', () => {
  const { clock, guard } = setup();
  const field = { name: 'field' };
  assert.equal(guard.submits(key('Enter', field), field), false); // not armed yet
  clock.t += 600;
  assert.equal(guard.submits(key('Enter', composer), field), false);
  assert.equal(guard.submits(key('Enter', field, { repeat: true }), field), false);
  assert.equal(guard.submits(key('Enter', field, { isComposing: true }), field), false);
  assert.equal(guard.submits(key('Enter', field), field), true);
});

test('showing the prompt again restarts the arming delay', () => {
  const { clock, guard } = setup();
  clock.t += 600;
  assert.ok(guard.armed());
  guard.shown();
  assert.equal(guard.accept(mouseClick(allow), allow), false);
});
