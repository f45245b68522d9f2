// @ts-check
/** Export a chat as Markdown (lib/export.js): paging the history, the document, the file name. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import './i18n-en.mjs';
import { HistoryCollector, chatToMarkdown, exportFileName, isOmissionMarker } from '../lib/export.js';

const user = (/** @type {string} */ text, /** @type {number} */ timestamp) => ({ role: 'user', text, timestamp });
const tool = (/** @type {string} */ name, ok = true, summary = '') => ({ role: 'tool', name, ok, summary, timestamp: 1 });
const answer = (/** @type {string} */ text) => ({ role: 'assistant', text, timestamp: 2 });

test('a v1 answer (no hasMore) is the whole history in one request', () => {
  const c = new HistoryCollector('sp-1', { pageTurns: 2 });
  assert.deepEqual(c.firstRequest(), { type: 'chat.history', id: 'sp-1', limit: 2 });
  const rows = [user('hi', 10), answer('hello')];
  assert.equal(c.accept({ messages: rows, hasMore: null }), null);
  assert.ok(c.done);
  assert.deepEqual(c.rows(), rows);
});

test('v2 pages backwards with before = the oldest user row, and the rows come out oldest first', () => {
  const c = new HistoryCollector('sp-1', { pageTurns: 2 });
  const newest = [user('three', 300), answer('3'), user('four', 400), answer('4')];
  const next = c.accept({ messages: newest, hasMore: true });
  assert.deepEqual(next, { type: 'chat.history', id: 'sp-1', limit: 2, before: 300 });
  const middle = [user('one', 100), answer('1'), user('two', 200), answer('2')];
  assert.deepEqual(c.accept({ messages: middle, hasMore: true }), { type: 'chat.history', id: 'sp-1', limit: 2, before: 100 });
  const oldest = [user('zero', 50), answer('0')];
  assert.equal(c.accept({ messages: oldest, hasMore: false }), null);
  assert.deepEqual(c.rows().filter((r) => r.role === 'user').map((r) => r.text), ['zero', 'one', 'two', 'three', 'four']);
});

test('a page cut to fit 1 MiB drops its marker when the next page brings those rows', () => {
  const c = new HistoryCollector('sp-1');
  const marker = { role: 'assistant', text: '(3 older messages not shown)' };
  assert.ok(isOmissionMarker(marker));
  assert.ok(!isOmissionMarker(answer('(3 older messages not shown)')), 'a real answer has a timestamp');
  c.accept({ messages: [marker, user('late', 500), answer('x')], hasMore: true });
  c.accept({ messages: [user('early', 100), answer('y')], hasMore: false });
  assert.deepEqual(c.rows().map((r) => r.text), ['early', 'y', 'late', 'x']);
});

test('the last page keeps its marker (a v1 host cannot send what it left out)', () => {
  const c = new HistoryCollector('sp-1');
  const marker = { role: 'assistant', text: '(1 older message not shown)' };
  c.accept({ messages: [marker, user('only', 5), answer('z')], hasMore: null });
  assert.equal(c.rows()[0], marker);
});

test('paging stops when pages stop moving back in time, and after maxPages', () => {
  const stuck = new HistoryCollector('sp-1');
  assert.ok(stuck.accept({ messages: [user('a', 100)], hasMore: true }));
  assert.equal(stuck.accept({ messages: [user('a', 100)], hasMore: true }), null);
  const bounded = new HistoryCollector('sp-2', { maxPages: 3 });
  assert.ok(bounded.accept({ messages: [user('c', 300)], hasMore: true }));
  assert.ok(bounded.accept({ messages: [user('b', 200)], hasMore: true }));
  assert.equal(bounded.accept({ messages: [user('a', 100)], hasMore: true }), null);
  const noUser = new HistoryCollector('sp-3');
  assert.equal(noUser.accept({ messages: [answer('?')], hasMore: true }), null);
});

test('the document: the user, the tools folded in <details>, the answer, turn after turn', () => {
  const md = chatToMarkdown({
    title: 'Buy a kettle',
    id: 'sp-1',
    exportedAt: new Date(Date.UTC(2025, 4, 1, 14, 3)),
    rows: [
      user('Find a kettle', Date.UTC(2025, 4, 1, 14, 0)),
      tool('inspect_page', true, '6 of 6 elements'),
      tool('click_index', false, 'click [9]: <no such element>\nretry'),
      answer('The **Copper Kettle** costs $34.\n\n```js\nlet a = 1;\n\n\nlet b = 2;\n```'),
      user('Thanks', Date.UTC(2025, 4, 1, 14, 5)),
      answer('You are welcome.'),
    ],
  });
  assert.equal(
    md,
    [
      '# Buy a kettle',
      '',
      '_Browy chat sp-1, exported 2025-05-01 14:03 UTC._',
      '',
      '### You · 2025-05-01 14:00 UTC',
      '',
      'Find a kettle',
      '',
      '<details>',
      '<summary>Tools used: 2 (1 failed)</summary>',
      '',
      '- <code>inspect_page</code> — ok — 6 of 6 elements',
      '- <code>click_index</code> — error — click [9]: &lt;no such element&gt; retry',
      '',
      '</details>',
      '',
      '### Browy',
      '',
      'The **Copper Kettle** costs $34.',
      '',
      '```js',
      'let a = 1;',
      '',
      '',
      'let b = 2;',
      '```',
      '',
      '---',
      '',
      '### You · 2025-05-01 14:05 UTC',
      '',
      'Thanks',
      '',
      '### Browy',
      '',
      'You are welcome.',
      '',
    ].join('\n'),
  );
});

test('tools of a turn that never answered are still listed', () => {
  const md = chatToMarkdown({ title: '', id: 'dt-9', exportedAt: new Date(0), rows: [user('go', 1), tool('navigate')] });
  assert.match(md, /^# dt-9\n/);
  assert.match(md, /<summary>Tools used: 1<\/summary>\n\n- <code>navigate<\/code> — ok\n\n<\/details>\n$/);
});

test('the file name is a slug of the title and the date', () => {
  const day = new Date(Date.UTC(2025, 0, 2, 12));
  assert.equal(exportFileName('Buy a Kettle — fast!', day), 'browy-buy-a-kettle-fast-2025-01-02.md');
  assert.equal(exportFileName('日本語', day), 'browy-chat-2025-01-02.md');
  assert.equal(exportFileName('x'.repeat(100), day), `browy-${'x'.repeat(40)}-2025-01-02.md`);
});
