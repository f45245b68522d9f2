// @ts-check
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createFakeChrome, createFakeTimers, flush } from './fake-chrome.mjs';
import { CdpExecutor, isAllowedUrl, tabInfo } from '../lib/cdp.js';

function setup(tabs) {
  const fake = createFakeChrome(tabs ? { tabs } : {});
  const timers = createFakeTimers();
  /** @type {any[]} */ const sent = [];
  const cdp = new CdpExecutor({ chromeApi: fake.chrome, send: (m) => sent.push(m), timers, idleDetachMs: 60_000, releaseGraceMs: 0 });
  cdp.start();
  return { fake, timers, sent, cdp };
}

const S = 'sp-1';
/** @param {string} callId @param {string} method @param {any} [extra] */
const send = (callId, method, extra = {}) => ({ type: 'cdp.send', sessionId: S, callId, tabId: 1, method, params: {}, ...extra });

test('cdp.send attaches once with version 1.3 and answers tool.result with {tabId, result}', async () => {
  const { cdp, fake, sent } = setup();
  await Promise.all([cdp.handle(send('c1', 'Runtime.evaluate')), cdp.handle(send('c2', 'Page.reload'))]);
  assert.deepEqual(fake.attachCalls, [{ tabId: 1, version: '1.3' }]);
  assert.deepEqual(sent.find((m) => m.callId === 'c1'), {
    type: 'tool.result', sessionId: S, callId: 'c1', ok: true, result: { tabId: 1, result: { ok: 'Runtime.evaluate' } },
  });
  assert.equal(sent.length, 2);
});

test('a failing CDP command answers ok:false with Chrome\'s error text', async () => {
  const { cdp, fake, sent } = setup();
  fake.chrome.debugger.handler = async () => { throw new Error('Cannot find context with specified id'); };
  await cdp.handle(send('c1', 'Runtime.evaluate'));
  assert.equal(sent[0].ok, false);
  assert.equal(sent[0].error, 'Cannot find context with specified id');
});

for (const url of ['chrome://settings/', 'edge://flags', 'brave://rewards', 'about:version', 'chrome-extension://abc/page.html',
  'https://chromewebstore.google.com/detail/x', 'https://chrome.google.com/webstore/category/extensions']) {
  test(`a browser-internal page (${url}) is refused with NOT_ALLOWED_URL`, async () => {
    const { cdp, fake, sent } = setup([{ id: 1, url, title: 'x', active: true, windowId: 1 }]);
    await cdp.handle(send('c1', 'Runtime.evaluate'));
    assert.equal(sent[0].ok, false);
    assert.equal(sent[0].error, `NOT_ALLOWED_URL: ${url}`);
    assert.equal(fake.attachCalls.length, 0);
  });
}

test('an attached tab is not asked for its URL again, and a navigation it makes is seen', async () => {
  const { cdp, fake, sent } = setup();
  let gets = 0;
  const realGet = fake.chrome.tabs.get;
  fake.chrome.tabs.get = async (/** @type {number} */ id) => { gets += 1; return realGet(id); };
  await cdp.handle(send('c1', 'Runtime.evaluate'));
  await cdp.handle(send('c2', 'Runtime.evaluate'));
  assert.equal(gets, 1);
  // The user navigates the tab to a browser page: the next command is refused.
  fake.chrome.tabs.onUpdated.emit(1, { url: 'chrome://settings/' }, { id: 1, url: 'chrome://settings/' });
  await cdp.handle(send('c3', 'Runtime.evaluate'));
  assert.equal(sent[2].ok, false);
  assert.equal(sent[2].error, 'NOT_ALLOWED_URL: chrome://settings/');
});

test('ordinary pages and about:blank are allowed', () => {
  for (const u of ['https://example.com/', 'http://localhost:8000/x', 'about:blank', 'file:///tmp/a.html']) assert.ok(isAllowedUrl(u), u);
  for (const u of ['about:srcdoc', 'devtools://devtools/x', 'view-source:https://a/', 'data:text/html,x', 'javascript:1']) assert.ok(!isAllowedUrl(u), u);
});

test('tab.new refuses a browser-internal URL', async () => {
  const { cdp, sent } = setup();
  await cdp.handle({ type: 'tab.new', sessionId: S, callId: 'c1', url: 'chrome://settings' });
  assert.equal(sent[0].ok, false);
  assert.match(sent[0].error, /^NOT_ALLOWED_URL: /);
});

test('a cancelled call is never answered late', async () => {
  const { cdp, fake, sent } = setup();
  /** @type {(v: any) => void} */
  let release = () => {};
  fake.chrome.debugger.handler = () => new Promise((r) => { release = r; });
  const running = cdp.handle(send('c1', 'Runtime.evaluate'));
  await flush();
  await cdp.handle({ type: 'cdp.cancel', sessionId: S, callId: 'c1' });
  release({ late: true });
  await running;
  assert.deepEqual(sent, []);
});

test('answers of a lost connection are dropped', async () => {
  const { cdp, fake, sent } = setup();
  /** @type {(v: any) => void} */
  let release = () => {};
  fake.chrome.debugger.handler = () => new Promise((r) => { release = r; });
  const running = cdp.handle(send('c1', 'Runtime.evaluate'));
  await flush();
  await cdp.connectionLost();
  release({});
  await running;
  assert.deepEqual(sent, []);
});

test('events are forwarded only for enabled domains and only to the session that used the tab', async () => {
  const { cdp, fake, sent } = setup();
  await cdp.handle(send('c1', 'Page.enable'));
  sent.length = 0;
  fake.chrome.debugger.onEvent.emit({ tabId: 1 }, 'Page.loadEventFired', { timestamp: 1 });
  fake.chrome.debugger.onEvent.emit({ tabId: 1 }, 'Network.requestWillBeSent', {});
  fake.chrome.debugger.onEvent.emit({ tabId: 2 }, 'Page.loadEventFired', {});
  assert.deepEqual(sent, [{ type: 'cdp.event', sessionId: S, tabId: 1, method: 'Page.loadEventFired', params: { timestamp: 1 } }]);
  await cdp.handle(send('c2', 'Page.disable'));
  sent.length = 0;
  fake.chrome.debugger.onEvent.emit({ tabId: 1 }, 'Page.loadEventFired', {});
  assert.deepEqual(sent, []);
});

test('a child session (targetSessionId) gets its commands, and its enabled domains\' events come back marked', async () => {
  const { cdp, fake, sent } = setup();
  await cdp.handle(send('c1', 'Target.setAutoAttach', { params: { autoAttach: true, waitForDebuggerOnStart: false, flatten: true } }));
  sent.length = 0;
  fake.chrome.debugger.onEvent.emit({ tabId: 1 }, 'Target.attachedToTarget', { sessionId: 'S1', targetInfo: { type: 'iframe' } });
  assert.equal(sent.length, 1); // Target events while auto-attaching
  await cdp.handle(send('c2', 'Page.enable', { targetSessionId: 'S1' }));
  assert.deepEqual(fake.commands.at(-1), { tabId: 1, sessionId: 'S1', method: 'Page.enable', params: {} });
  sent.length = 0;
  fake.chrome.debugger.onEvent.emit({ tabId: 1, sessionId: 'S1' }, 'Page.loadEventFired', { timestamp: 2 });
  fake.chrome.debugger.onEvent.emit({ tabId: 1, sessionId: 'S1' }, 'Network.requestWillBeSent', {});
  fake.chrome.debugger.onEvent.emit({ tabId: 1 }, 'Page.loadEventFired', {}); // the tab's Page is not on
  assert.deepEqual(sent, [{ type: 'cdp.event', sessionId: S, tabId: 1, method: 'Page.loadEventFired', params: { timestamp: 2 }, targetSessionId: 'S1' }]);
});

test('Input events are forwarded while drags are intercepted', async () => {
  const { cdp, fake, sent } = setup();
  await cdp.handle(send('c1', 'Input.setInterceptDrags', { params: { enabled: true } }));
  sent.length = 0;
  fake.chrome.debugger.onEvent.emit({ tabId: 1 }, 'Input.dragIntercepted', { data: { items: [] } });
  assert.equal(sent.length, 1);
  assert.equal(sent[0].method, 'Input.dragIntercepted');
  await cdp.handle(send('c2', 'Input.setInterceptDrags', { params: { enabled: false } }));
  sent.length = 0;
  fake.chrome.debugger.onEvent.emit({ tabId: 1 }, 'Input.dragIntercepted', { data: {} });
  assert.deepEqual(sent, []);
});

test('control.release detaches the owner\'s tabs and clears the indicator', async () => {
  const { cdp, fake } = setup();
  await cdp.handle(send('c1', 'Runtime.evaluate', { controlOwnerId: 't-1' }));
  assert.equal(fake.badges[1], 'AI');
  await cdp.handle({ type: 'control.release', ownerId: 't-1' });
  assert.deepEqual(fake.detachCalls, [1]);
  assert.equal(fake.badges[1], '');
  assert.equal(cdp.tabs.size, 0);
});

test('control.release keeps a tab another owner still holds', async () => {
  const { cdp, fake } = setup();
  await cdp.handle(send('c1', 'Runtime.evaluate', { controlOwnerId: 't-1' }));
  await cdp.handle(send('c2', 'Runtime.evaluate', { controlOwnerId: 't-2' }));
  await cdp.handle({ type: 'control.release', ownerId: 't-1' });
  assert.deepEqual(fake.detachCalls, []);
  await cdp.handle({ type: 'control.release', ownerId: 't-2' });
  assert.deepEqual(fake.detachCalls, [1]);
});

test('a released tab stays attached a moment, and a dialog opening then keeps it until it closes', async () => {
  const fake = createFakeChrome({});
  const timers = createFakeTimers();
  /** @type {any[]} */ const sent = [];
  const cdp = new CdpExecutor({ chromeApi: fake.chrome, send: (m) => sent.push(m), timers, releaseGraceMs: 2_000 });
  cdp.start();
  await cdp.handle(send('c1', 'Page.enable', { controlOwnerId: 't-1' }));
  await cdp.handle({ type: 'control.release', ownerId: 't-1' });
  assert.equal(fake.badges[1], ''); // the indicator goes at once
  timers.advance(1_000);
  fake.chrome.debugger.onEvent.emit({ tabId: 1 }, 'Page.javascriptDialogOpening', { type: 'alert', message: 'Later!' });
  timers.advance(5_000);
  await flush();
  assert.deepEqual(fake.detachCalls, []);
  fake.chrome.debugger.onEvent.emit({ tabId: 1 }, 'Page.javascriptDialogClosed', { result: true });
  await flush();
  assert.deepEqual(fake.detachCalls, [1]);
  await cdp.handle(send('c2', 'Runtime.evaluate', { controlOwnerId: 't-2' }));
  await cdp.handle({ type: 'control.release', ownerId: 't-2' });
  timers.advance(2_000);
  await flush();
  assert.deepEqual(fake.detachCalls, [1, 1]); // no dialog: detached after the grace
});

test('a tab with an open dialog stays attached through release and idleness until it closes', async () => {
  const { cdp, fake, timers, sent } = setup();
  await cdp.handle(send('c1', 'Page.enable', { controlOwnerId: 't-1' }));
  const opening = { type: 'confirm', message: 'Delete?', url: 'https://a.test/' };
  fake.chrome.debugger.onEvent.emit({ tabId: 1 }, 'Page.javascriptDialogOpening', opening);
  assert.equal(sent.at(-1).method, 'Page.javascriptDialogOpening');
  await cdp.handle({ type: 'control.release', ownerId: 't-1' });
  timers.advance(120_000);
  await flush();
  assert.deepEqual(fake.detachCalls, []); // only this attachment can answer the dialog
  fake.chrome.debugger.onEvent.emit({ tabId: 1 }, 'Page.javascriptDialogClosed', { result: true });
  await flush();
  assert.deepEqual(fake.detachCalls, [1]);
});

test('an idle tab is detached after 60 seconds without calls', async () => {
  const { cdp, fake, timers } = setup();
  await cdp.handle(send('c1', 'Runtime.evaluate'));
  timers.advance(59_000);
  await cdp.handle(send('c2', 'Runtime.evaluate'));
  timers.advance(59_000);
  await flush();
  assert.deepEqual(fake.detachCalls, []);
  timers.advance(1_000);
  await flush();
  assert.deepEqual(fake.detachCalls, [1]);
});

test('chrome.debugger.onDetach forgets the tab and tells its session', async () => {
  const { cdp, fake, sent } = setup();
  await cdp.handle(send('c1', 'Runtime.evaluate'));
  sent.length = 0;
  fake.attached.delete(1);
  fake.chrome.debugger.onDetach.emit({ tabId: 1 }, 'canceled_by_user');
  assert.equal(cdp.tabs.size, 0);
  assert.deepEqual(sent, [{ type: 'cdp.event', sessionId: S, tabId: 1, method: 'Inspector.detached', params: { reason: 'canceled_by_user' } }]);
  await cdp.handle(send('c2', 'Runtime.evaluate'));
  assert.equal(fake.attachCalls.length, 2);
});

test('tab operations answer with TabInfo', async () => {
  const { cdp, fake, sent } = setup();
  await cdp.handle({ type: 'tab.new', sessionId: S, callId: 'n', url: 'https://example.org/', active: true });
  const created = sent.at(-1);
  assert.equal(created.ok, true);
  assert.deepEqual(Object.keys(created.result).sort(), ['active', 'tabId', 'title', 'url', 'windowId']);
  assert.equal(created.result.url, 'https://example.org/');
  const newId = created.result.tabId;

  await cdp.handle({ type: 'tab.activate', sessionId: S, callId: 'a', tabId: 1 });
  assert.equal(sent.at(-1).result.tabId, 1);
  assert.equal(sent.at(-1).result.active, true);

  await cdp.handle({ type: 'tab.list', sessionId: S, callId: 'l' });
  assert.deepEqual(sent.at(-1).result.map((/** @type {any} */ t) => t.tabId).sort(), [1, newId].sort());

  await cdp.handle({ type: 'tab.getActive', sessionId: S, callId: 'g', windowId: 1 });
  assert.equal(sent.at(-1).result.tabId, 1);
  await cdp.handle({ type: 'tab.getActive', sessionId: S, callId: 'g2', windowId: 99 });
  assert.equal(sent.at(-1).ok, true);
  assert.equal(sent.at(-1).result, null);

  await cdp.handle({ type: 'tab.close', sessionId: S, callId: 'c', tabId: newId });
  assert.equal(sent.at(-1).ok, true);
  assert.ok(!fake.tabs.has(newId));
  await cdp.handle({ type: 'tab.close', sessionId: S, callId: 'c2', tabId: 12345 });
  assert.equal(sent.at(-1).ok, false);
});

test('a restarted worker detaches the tabs its previous incarnation left attached', async () => {
  const { cdp, fake } = setup();
  await cdp.handle(send('c1', 'Runtime.evaluate'));
  const next = new CdpExecutor({ chromeApi: fake.chrome, send: () => {}, timers: createFakeTimers() });
  await next.restore();
  assert.deepEqual(fake.detachCalls, [1]);
});

test('a tab still loading its first page is listed with the address it is loading', () => {
  // Chrome gives such a tab url '' and the address in pendingUrl (a popup a click just opened).
  const loading = tabInfo({ id: 7, url: '', pendingUrl: 'https://example.org/help', title: '', active: false, windowId: 1 });
  assert.equal(loading.url, 'https://example.org/help');
  assert.equal(tabInfo({ id: 8, url: 'https://a.test/', pendingUrl: 'https://b.test/', windowId: 1 }).url, 'https://a.test/');
  assert.equal(tabInfo({ id: 9, windowId: 1 }).url, '');
});
