// @ts-check
import assert from 'node:assert/strict';
import test from 'node:test';
import { browserName } from '../lib/browser-name.js';

const brands = (/** @type {string[]} */ ...names) => ({ userAgentData: { brands: names.map((brand) => ({ brand })) } });

test('each browser is named as browy doctor names it', () => {
  assert.equal(browserName(brands('Not A(Brand', 'Google Chrome', 'Chromium')), 'chrome');
  assert.equal(browserName(brands('Chromium', 'Not_A Brand')), 'chromium');
  assert.equal(browserName(brands('Microsoft Edge', 'Chromium', 'Not A;Brand')), 'edge');
  assert.equal(browserName(brands('Brave', 'Chromium', 'Not/A)Brand')), 'brave');
  assert.equal(browserName({ userAgent: 'Mozilla/5.0 ... Chrome/126.0 Safari/537.36 Vivaldi/6.7' }), 'vivaldi');
  assert.equal(browserName({ userAgent: 'Mozilla/5.0 ... Chrome/126.0 Safari/537.36 Edg/126.0' }), 'edge');
  assert.equal(browserName(undefined), '');
});
