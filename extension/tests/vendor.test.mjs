// @ts-check
/** Vendored libraries: every file in vendor/ is accounted for in vendor/README.md and vice versa. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('../vendor/', import.meta.url));
const readme = readFileSync(dir + 'README.md', 'utf8');

test('every vendored file is named in vendor/README.md', () => {
  const unlisted = readdirSync(dir).filter((f) => f !== 'README.md' && !readme.includes(`\`${f}\``));
  assert.deepEqual(unlisted, []);
});

test('every file the README table lists, and each licence file, is there', () => {
  const rows = readme.split('\n').filter((line) => line.startsWith('| `'));
  const named = rows.flatMap((row) => {
    const cells = row.split('|');
    return [cells[1], cells[4]].flatMap((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]));
  });
  assert.ok(named.length >= 5);
  const present = new Set(readdirSync(dir));
  assert.deepEqual(named.filter((f) => !present.has(f)), []);
});

test('the highlight.js files are the version the README names', () => {
  const header = readFileSync(dir + 'highlight.core.js', 'utf8').slice(0, 200);
  const version = /Highlight\.js v(\d+\.\d+\.\d+)/.exec(header)?.[1];
  assert.ok(version && readme.includes(version), `core says ${version}`);
});
