// @ts-check
import assert from 'node:assert/strict';
import test from 'node:test';
import './i18n-en.mjs';
import { ImageAssembler } from '../lib/images.js';

test('pieces in any order make the whole data URL; a repeat or a stray index changes nothing', () => {
  const a = new ImageAssembler();
  assert.equal(a.add({ imageId: 'i1', mime: 'image/png', index: 1, count: 3, data: 'BB' }), null);
  assert.equal(a.add({ imageId: 'i1', mime: 'image/png', index: 1, count: 3, data: 'XX' }), null);
  assert.equal(a.add({ imageId: 'i1', mime: 'image/png', index: 7, count: 3, data: 'ZZ' }), null);
  assert.equal(a.add({ imageId: 'i1', mime: 'image/png', index: 0, count: 3, data: 'AA' }), null);
  assert.equal(a.add({ imageId: 'i1', mime: 'image/png', index: 2, count: 3, data: 'CC' }), 'data:image/png;base64,AABBCC');
  assert.equal(a.pending.size, 0);
});

test('an image the host no longer keeps is said to be gone', () => {
  const a = new ImageAssembler();
  assert.equal(a.add({ imageId: 'i2', missing: true }), '');
});
