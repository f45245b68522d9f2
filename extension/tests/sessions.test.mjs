// @ts-check
import { test } from 'node:test';
import assert from 'node:assert/strict';
import './i18n-en.mjs'; // the English strings (lib/i18n.js falls back to them without chrome.i18n)
import { createFakeChrome, createFakeTimers, flush } from './fake-chrome.mjs';
import { createBackground } from '../lib/background.js';
import { SessionRegistry } from '../lib/sessions.js';

async function setup() {
  const fake = createFakeChrome();
  const timers = createFakeTimers();
  const bg = createBackground({ chromeApi: fake.chrome, native: { timers, random: () => 1 }, cdp: { timers } });
  bg.start();
  await flush();
  const host = () => /** @type {import('./fake-chrome.mjs').FakePort} */ (fake.nativePorts.at(-1));
  host().push({ type: 'hello.ack', protocol: 2, serverVersion: '0.1.0' });
  return { fake, timers, bg, host };
}

/** @param {any} port @param {string} sessionId @param {any} [extra] */
async function startSession(port, sessionId, extra = {}) {
  port.push({ type: 'session.start', sessionId, capabilities: ['cdp.activeTab'], ...extra });
  await flush();
}

test('a panel is told the connection state when it connects', async () => {
  const { fake } = await setup();
  const panel = fake.connectPanel();
  assert.deepEqual(panel.posted[0], { type: '__state', state: 'ready', detail: 'host 0.1.0 protocol 2', fix: '' });
});

test('session.start goes to the host with the panel window added', async () => {
  const { fake, host } = await setup();
  const panel = fake.connectPanel();
  await startSession(panel, 'sp-a');
  assert.deepEqual(host().ofType('session.start'), [{ type: 'session.start', sessionId: 'sp-a', capabilities: ['cdp.activeTab'], windowId: 1 }]);
});

test('host messages are routed by sessionId and broadcast without one', async () => {
  const { fake, host } = await setup();
  const a = fake.connectPanel();
  const b = fake.connectPanel();
  await startSession(a, 'sp-a');
  await startSession(b, 'dt-b', { inspectedTabId: 1 });
  a.posted.length = 0;
  b.posted.length = 0;
  host().push({ type: 'chat.delta', sessionId: 'sp-a', text: 'hi' });
  host().push({ type: 'models.current', id: 'm1' });
  assert.deepEqual(a.posted, [{ type: 'chat.delta', sessionId: 'sp-a', text: 'hi' }, { type: 'models.current', id: 'm1' }]);
  assert.deepEqual(b.posted, [{ type: 'models.current', id: 'm1' }]);
});

test('panel-internal and host-only messages from a panel never reach the host', async () => {
  const { fake, host } = await setup();
  const panel = fake.connectPanel();
  panel.push({ type: '__getState' });
  panel.push({ type: 'tool.result', sessionId: 'x', callId: 'c', ok: true });
  panel.push({ type: 'hello', client: 'extension', protocol: 1 });
  await flush();
  assert.deepEqual(host().posted.map((m) => m.type), ['hello']);
  assert.equal(panel.posted.at(-1).type, '__state');
});

test('closing a panel sends session.end for its sessions', async () => {
  const { fake, host, bg } = await setup();
  const panel = fake.connectPanel();
  await startSession(panel, 'sp-a');
  panel.drop();
  assert.deepEqual(host().ofType('session.end'), [{ type: 'session.end', sessionId: 'sp-a' }]);
  assert.deepEqual(bg.registry.sessionIds(), []);
});

test('live sessions are registered again after a reconnect', async () => {
  const { fake, host, timers } = await setup();
  const panel = fake.connectPanel();
  await startSession(panel, 'sp-a');
  const first = host();
  first.drop('Native host has exited.');
  assert.equal(panel.posted.at(-1).state, 'host_crashed');
  timers.advance(1_000);
  await flush();
  const second = host();
  assert.notEqual(first, second);
  assert.deepEqual(second.posted.map((m) => m.type), ['hello']);
  second.push({ type: 'hello.ack', protocol: 2 });
  assert.deepEqual(second.posted.map((m) => m.type), ['hello', 'session.start']);
  assert.equal(second.posted[1].sessionId, 'sp-a');
});

test('a chat.send that cannot reach the host ends with chat.error and status.error', async () => {
  const { fake, host } = await setup();
  const panel = fake.connectPanel();
  await startSession(panel, 'sp-a');
  host().drop('Specified native messaging host not found.');
  panel.posted.length = 0;
  panel.push({ type: 'chat.send', sessionId: 'sp-a', text: 'hi', turnId: 't1' });
  await flush();
  assert.deepEqual(panel.posted.map((m) => [m.type, m.code ?? m.event]), [['chat.error', 'CONNECTION_LOST'], ['event.activity', 'status.error']]);
  assert.match(panel.posted[0].message, /browy install-host/);
});

test('cdp requests from the host are executed and answered on the native port', async () => {
  const { host } = await setup();
  host().push({ type: 'cdp.send', sessionId: 'sp-a', callId: 'c1', tabId: 1, method: 'Runtime.evaluate', params: {} });
  await flush();
  assert.equal(host().ofType('tool.result')[0].ok, true);
});

test('a session id registered from a second panel moves to it', async () => {
  const { fake, host } = await setup();
  const a = fake.connectPanel();
  const b = fake.connectPanel();
  await startSession(a, 'sp-a');
  await startSession(b, 'sp-a');
  assert.equal(a.posted.at(-1).type, '__session_moved');
  b.posted.length = 0;
  host().push({ type: 'chat.delta', sessionId: 'sp-a', text: 'x' });
  assert.equal(b.posted.length, 1);
  a.drop();
  assert.equal(host().ofType('session.end').length, 0);
});

test('the registry is kept in chrome.storage.session and restored as orphans', async () => {
  const fake = createFakeChrome();
  const reg = new SessionRegistry({ chromeApi: fake.chrome });
  const port = fake.connectPanel();
  const entry = /** @type {any} */ (reg.attach(port));
  reg.register(entry, { type: 'session.start', sessionId: 'sp-z' });
  await flush();
  assert.ok(fake.chrome.storage.session.data['browy.sessions']['sp-z']);
  const next = new SessionRegistry({ chromeApi: fake.chrome });
  assert.deepEqual(await next.restore(-1), ['sp-z']);
});

test('ports with other names are ignored', () => {
  const fake = createFakeChrome();
  const reg = new SessionRegistry({ chromeApi: fake.chrome });
  assert.equal(reg.attach(/** @type {any} */ ({ name: 'other' })), null);
});

test('the test hook exposes state, send and received', async () => {
  const { bg, host } = await setup();
  assert.equal(bg.testHook.state.state, 'ready');
  bg.testHook.send({ type: 'chat.list' });
  assert.equal(host().ofType('chat.list').length, 1);
  host().push({ type: 'sdk.ready', ok: true });
  assert.equal(bg.testHook.received.at(-1).type, 'sdk.ready');
});

test('a chat.send right behind session.start does not overtake it', async () => {
  const { fake, host } = await setup();
  const panel = fake.connectPanel();
  panel.push({ type: 'session.start', sessionId: 'sp-o', capabilities: [] });
  panel.push({ type: 'chat.send', sessionId: 'sp-o', text: 'hi', turnId: 't1' });
  await flush();
  assert.deepEqual(host().posted.map((m) => m.type), ['hello', 'session.start', 'chat.send']);
});

test('a second end of the same turn, and the status after it, never reach the panel', async () => {
  const { fake, host } = await setup();
  const panel = fake.connectPanel();
  await startSession(panel, 'sp-a');
  panel.posted.length = 0;
  // The relay ended t1 when the daemon died; a new daemon later ends it again.
  host().push({ type: 'chat.error', sessionId: 'sp-a', code: 'CONNECTION_LOST', message: 'x', turnId: 't1' });
  host().push({ type: 'event.activity', sessionId: 'sp-a', event: 'status.error' });
  host().push({ type: 'chat.error', sessionId: 'sp-a', code: 'CONNECTION_LOST', message: 'again', turnId: 't1' });
  host().push({ type: 'event.activity', sessionId: 'sp-a', event: 'status.error' });
  // The next turn's own end and status still arrive.
  host().push({ type: 'chat.done', sessionId: 'sp-a', text: 'ok', turnId: 't2' });
  host().push({ type: 'event.activity', sessionId: 'sp-a', event: 'status.idle' });
  assert.deepEqual(panel.posted.map((m) => [m.type, m.turnId ?? m.event]), [
    ['chat.error', 't1'], ['event.activity', 'status.error'],
    ['chat.done', 't2'], ['event.activity', 'status.idle'],
  ]);
});

test('a turn open when the native port drops ends in its panel, and a late host end is dropped', async () => {
  const { fake, host } = await setup();
  const panel = fake.connectPanel();
  await startSession(panel, 'sp-a');
  panel.push({ type: 'chat.send', sessionId: 'sp-a', text: 'hi', turnId: 't9' });
  await flush();
  panel.posted.length = 0;
  host().drop('Native host has exited.');
  await flush();
  const ends = panel.posted.filter((m) => m.type === 'chat.error');
  assert.deepEqual(ends.map((m) => [m.turnId, m.code]), [['t9', 'CONNECTION_LOST']]);
  assert.ok(panel.posted.some((m) => m.type === 'event.activity' && m.event === 'status.error'));
  // The host got the send after all and ends the turn when the session is back: dropped.
  const count = panel.posted.length;
  const bg2host = fake.nativePorts.at(-1);
  bg2host?.push({ type: 'chat.error', sessionId: 'sp-a', code: 'CONNECTION_LOST', message: 'x', turnId: 't9' });
  assert.equal(panel.posted.filter((m) => m.type === 'chat.error').length, 1);
  assert.ok(panel.posted.length >= count);
});
