// @ts-check
/**
 * The strings table (_locales/<lang>/messages.json) and lib/i18n.js: every key the code uses
 * exists in English, none is left unused, placeholders are consistent, and the fallback used in
 * node tests follows chrome.i18n.getMessage's substitution rules.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EN } from './i18n-en.mjs';
import { formatMessage, t, useMessages } from '../lib/i18n.js';

const root = fileURLToPath(new URL('../', import.meta.url));

/** The extension's own source files (not tests, not vendored code), relative to extension/. */
function sourceFiles() {
  const top = readdirSync(root).filter((f) => /\.(js|html|json|css)$/.test(f));
  const lib = readdirSync(root + 'lib').filter((f) => f.endsWith('.js')).map((f) => `lib/${f}`);
  return [...top, ...lib];
}

/** @returns {Map<string, string[]>} key -> files using it */
function usedKeys() {
  /** @type {Map<string, string[]>} */
  const used = new Map();
  const patterns = [
    /\bt\(\s*'([^']*)'/g, // t('key', …) in scripts
    /\bdata-i18n(?:-[a-z-]+)?="([^"]*)"/g, // data-i18n="key" in pages
    /__MSG_([A-Za-z0-9_@]+)__/g, // the manifest (and anything else Chrome localizes)
  ];
  for (const file of sourceFiles()) {
    const text = readFileSync(root + file, 'utf8');
    for (const re of patterns) {
      for (const match of text.matchAll(re)) {
        if (match[1].startsWith('@@')) continue; // Chrome's predefined messages
        used.set(match[1], [...(used.get(match[1]) ?? []), file]);
      }
    }
  }
  return used;
}

test('every message key used in the code exists in _locales/en/messages.json', () => {
  const known = new Set(Object.keys(EN).map((k) => k.toLowerCase()));
  const missing = [...usedKeys()].filter(([k]) => !known.has(k.toLowerCase())).map(([k, files]) => `${k} (${files.join(', ')})`);
  assert.deepEqual(missing, []);
});

test('every English message is used somewhere', () => {
  const used = new Set([...usedKeys().keys()].map((k) => k.toLowerCase()));
  assert.deepEqual(Object.keys(EN).filter((k) => !used.has(k.toLowerCase())), []);
});

test('message keys are always literals, so the check above sees them all', () => {
  const computed = [];
  for (const file of sourceFiles().filter((f) => f.endsWith('.js') && f !== 'lib/i18n.js')) {
    const text = readFileSync(root + file, 'utf8');
    for (const match of text.matchAll(/\bt\(\s*([^'\s)])/g)) computed.push(`${file}: t(${match[1]}…`);
  }
  assert.deepEqual(computed, []);
});

test('message names are valid for Chrome and unique ignoring case', () => {
  const names = Object.keys(EN);
  assert.deepEqual(names.filter((k) => !/^[A-Za-z0-9_]+$/.test(k)), []);
  assert.equal(new Set(names.map((k) => k.toLowerCase())).size, names.length);
  for (const [k, v] of Object.entries(EN)) {
    assert.equal(typeof v.message, 'string', k);
    assert.ok(v.description, `${k} has a description for translators`);
  }
});

test('each $PLACEHOLDER$ of a message is declared, each declared one is used, each is $1-$9', () => {
  const problems = [];
  for (const [key, entry] of Object.entries(EN)) {
    const inMessage = new Set([...entry.message.matchAll(/\$([A-Za-z0-9_@]+)\$/g)].map((m) => m[1].toLowerCase()));
    const declared = new Set(Object.keys(entry.placeholders ?? {}).map((k) => k.toLowerCase()));
    for (const n of inMessage) if (!declared.has(n)) problems.push(`${key}: $${n}$ not declared`);
    for (const n of declared) if (!inMessage.has(n)) problems.push(`${key}: placeholder ${n} unused`);
    for (const [n, p] of Object.entries(entry.placeholders ?? {})) {
      if (!/^\$[1-9]$/.test(p.content)) problems.push(`${key}: placeholder ${n} content ${p.content}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('the manifest uses the English table as its default locale', () => {
  const manifest = JSON.parse(readFileSync(root + 'manifest.json', 'utf8'));
  assert.equal(manifest.default_locale, 'en');
  assert.equal(manifest.name, '__MSG_extName__');
  assert.equal(t('extName'), 'Browy');
});

test('a translation has no key that English lacks', () => {
  for (const lang of readdirSync(root + '_locales')) {
    const table = JSON.parse(readFileSync(`${root}_locales/${lang}/messages.json`, 'utf8'));
    assert.deepEqual(Object.keys(table).filter((k) => !(k in EN)), [], lang);
  }
});

test('t() fills placeholders from substitutions, as chrome.i18n.getMessage does', () => {
  assert.equal(t('statusQueued', 2), 'Waiting in line — position 2');
  assert.equal(t('usageLine', 10, 2, 12), 'Tokens: 10 in · 2 out · 12 total');
  assert.equal(t('sendButton'), 'Send');
  assert.equal(t('SENDBUTTON'), 'Send', 'names are case-insensitive');
});

test('formatMessage: $$ is a dollar, a missing substitution is empty, inserted text is not rescanned', () => {
  const entry = { message: 'Pay $$5 to $WHO$ for $WHAT$', placeholders: { who: { content: '$1' }, WHAT: { content: '$2' } } };
  assert.equal(formatMessage(entry, ['$2 Ann']), 'Pay $5 to $2 Ann for ');
});

test('t() prefers chrome.i18n when there is one, and shows an unknown key as itself', () => {
  const g = /** @type {any} */ (globalThis);
  g.chrome = { i18n: { getMessage: (/** @type {string} */ k, /** @type {string[]} */ s) => (k === 'sendButton' ? `Senden ${s.length}` : '') } };
  try {
    assert.equal(t('sendButton'), 'Senden 0');
    assert.equal(t('stopButton'), 'Stop', 'falls back to the table when Chrome has no text');
  } finally {
    delete g.chrome;
  }
  useMessages(null);
  try {
    assert.equal(t('noSuchKey'), 'noSuchKey');
  } finally {
    useMessages(EN);
  }
});
