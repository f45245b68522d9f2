// @ts-check
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { HOST_TO_EXT, EXT_TO_HOST, isPanelToHost, inboundHandler } from '../lib/protocol.js';

const dir = fileURLToPath(new URL('../../tests/fixtures/wire/', import.meta.url));
const inboundPath = dir + 'inbound.json'; // extension -> host (the host's inbound)
const outboundPath = dir + 'outbound.json'; // host -> extension
const have = existsSync(inboundPath) && existsSync(outboundPath);
const skip = have ? false : `shared wire fixtures not found in ${dir} (inbound.json / outbound.json)`;

/** @param {string} p @returns {string[]} */
function typesOf(p) {
  const list = JSON.parse(readFileSync(p, 'utf8'));
  return [...new Set(list.map((/** @type {any} */ x) => x.message.type))];
}

test('the extension -> host table covers every type of the shared inbound fixtures', { skip }, () => {
  const missing = typesOf(inboundPath).filter((t) => !(t in EXT_TO_HOST));
  assert.deepEqual(missing, []);
});

test('the host -> extension table covers every type of the shared outbound fixtures', { skip }, () => {
  const missing = typesOf(outboundPath).filter((t) => !(t in HOST_TO_EXT));
  assert.deepEqual(missing, []);
});

test('every type in our tables appears in the shared fixtures', { skip }, () => {
  assert.deepEqual(Object.keys(EXT_TO_HOST).filter((t) => !typesOf(inboundPath).includes(t)), []);
  assert.deepEqual(Object.keys(HOST_TO_EXT).filter((t) => !typesOf(outboundPath).includes(t)), []);
});

test('panels may send only panel types; internal "__" types are never host messages', () => {
  assert.ok(isPanelToHost({ type: 'chat.send' }));
  assert.ok(!isPanelToHost({ type: 'tool.result' }));
  assert.ok(!isPanelToHost({ type: '__getState' }));
  assert.equal(inboundHandler('__host_ready'), undefined);
  assert.equal(inboundHandler('cdp.send'), 'cdp');
  assert.equal(inboundHandler('nope'), undefined);
});
