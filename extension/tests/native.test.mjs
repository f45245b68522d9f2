// @ts-check
import { test } from 'node:test';
import assert from 'node:assert/strict';
import './i18n-en.mjs'; // the English strings (lib/i18n.js falls back to them without chrome.i18n)
import { createFakeChrome, createFakeTimers, flush } from './fake-chrome.mjs';
import { BACKOFF, NativeConnection, IllegalTransition, TRANSITIONS, classifyDisconnect } from '../lib/native.js';
import { EXTENSION_ID } from '../lib/protocol.js';

/** @param {Partial<import('../lib/native.js').NativeOptions>} [extra] */
function setup(extra = {}) {
  const fake = createFakeChrome();
  const timers = createFakeTimers();
  /** @type {any[]} */ const states = [];
  /** @type {any[]} */ const messages = [];
  /** @type {any[]} */ const dropped = [];
  const conn = new NativeConnection({
    chromeApi: fake.chrome,
    timers,
    random: () => 1,
    onState: (s) => states.push(s),
    onMessage: (m) => messages.push(m),
    onDrop: (m, reason) => dropped.push({ m, reason }),
    ...extra,
  });
  return { fake, timers, conn, states, messages, dropped };
}

async function readyConn(extra = {}) {
  const s = setup(extra);
  await s.conn.connect();
  s.fake.nativePorts.at(-1)?.push({ type: 'hello.ack', protocol: 2, serverVersion: '0.1.0' });
  return s;
}

test('the connection goes disconnected -> connecting -> awaiting_hello -> ready', async () => {
  const { conn, states, fake } = setup();
  assert.equal(conn.state, 'disconnected');
  await conn.connect();
  assert.equal(conn.state, 'awaiting_hello');
  fake.nativePorts[0].push({ type: 'hello.ack', protocol: 2, serverVersion: '0.1.0' });
  assert.deepEqual(states.map((s) => s.state), ['connecting', 'awaiting_hello', 'ready']);
});

test('an illegal transition throws', () => {
  const { conn } = setup();
  assert.throws(() => conn.transition('ready'), IllegalTransition);
  assert.ok(!TRANSITIONS.disconnected.includes('ready'));
});

test('hello carries the v2 fields and a persisted installId', async () => {
  const { conn, fake } = setup();
  await conn.connect();
  const [hello] = fake.nativePorts[0].posted;
  assert.equal(fake.nativePorts[0].name, 'com.browy.host');
  assert.equal(hello.type, 'hello');
  assert.equal(hello.client, 'extension');
  assert.equal(hello.protocol, 2);
  assert.equal(hello.extensionVersion, '0.1.0');
  assert.ok(Array.isArray(hello.capabilities) && hello.capabilities.length > 0);
  assert.match(hello.installId, /^[0-9a-f]{32}$/);
  assert.equal(fake.chrome.storage.local.data['browy.installId'], hello.installId);
  // A second connection object of the same profile reuses it.
  const again = new NativeConnection({ chromeApi: fake.chrome, timers: createFakeTimers() });
  assert.equal(await again.installId(), hello.installId);
});

for (const [text, state, fixPart] of [
  ['Specified native messaging host not found.', 'host_missing', 'browy install-host'],
  ['Access to the specified native messaging host is forbidden.', 'host_forbidden', `--extension-id ${EXTENSION_ID}`],
  ['Native host has exited.', 'host_crashed', 'restarting'],
  ['Error when communicating with the native messaging host.', 'host_crashed', 'browy doctor'],
]) {
  test(`a disconnect with "${text}" becomes ${state} with its fix`, async () => {
    const { conn, fake, states } = await readyConn();
    fake.nativePorts[0].drop(text);
    assert.equal(conn.state, state);
    assert.equal(classifyDisconnect(text), state);
    const last = states.at(-1);
    assert.equal(last.state, state);
    assert.equal(last.detail, text);
    assert.ok(last.fix.includes(fixPart), last.fix);
  });
}

test('error PROTOCOL_MISMATCH becomes protocol_mismatch and closes the port', async () => {
  const { conn, fake } = setup();
  await conn.connect();
  fake.nativePorts[0].push({ type: 'error', code: 'PROTOCOL_MISMATCH', message: 'no common protocol' });
  assert.equal(conn.state, 'protocol_mismatch');
  assert.ok(fake.nativePorts[0].disconnected);
  assert.match(conn.info().fix, /update/i);
});

test('error ORIGIN_FORBIDDEN becomes host_forbidden, not host_crashed on the following exit', async () => {
  const { conn, fake } = setup();
  await conn.connect();
  const port = fake.nativePorts[0];
  port.push({ type: 'error', code: 'ORIGIN_FORBIDDEN', message: 'origin not allowed' });
  port.drop('Native host has exited.');
  assert.equal(conn.state, 'host_forbidden');
});

test('other host errors are passed on, not treated as connection problems', async () => {
  const { conn, fake, messages } = await readyConn();
  fake.nativePorts[0].push({ type: 'error', code: 'INVALID_MESSAGE', message: 'x', requestType: 'chat.send' });
  assert.equal(conn.state, 'ready');
  assert.equal(messages.at(-1).code, 'INVALID_MESSAGE');
});

test('a keepalive ping is sent every 20 seconds while ready and pings are answered', async () => {
  const { fake, timers } = await readyConn();
  const port = fake.nativePorts[0];
  timers.advance(19_999);
  assert.equal(port.ofType('ping').length, 0);
  timers.advance(1);
  timers.advance(20_000);
  const pings = port.ofType('ping');
  assert.equal(pings.length, 2);
  assert.ok(pings[0].id !== pings[1].id);
  port.push({ type: 'ping', id: 18 });
  assert.deepEqual(port.ofType('pong'), [{ type: 'pong', id: 18 }]);
});

test('no keepalive runs after the port dropped', async () => {
  const { fake, timers } = await readyConn();
  fake.nativePorts[0].drop('Native host has exited.');
  const before = fake.nativePorts[0].posted.length;
  timers.advance(60_000 * 0.3);
  assert.equal(fake.nativePorts[0].posted.length, before);
});

test('reconnect backoff grows exponentially and is bounded', async () => {
  const { conn, fake, timers } = setup({ baseBackoffMs: 500, maxBackoffMs: 8_000 });
  await conn.connect();
  /** @type {number[]} */
  const delays = [];
  for (let i = 0; i < 8; i++) {
    const port = fake.nativePorts.at(-1);
    port?.drop('Native host has exited.');
    const start = timers.now();
    const count = fake.nativePorts.length;
    while (fake.nativePorts.length === count) {
      timers.advance(100);
      await flush();
    }
    delays.push(timers.now() - start);
  }
  assert.deepEqual(delays, [500, 1000, 2000, 4000, 8000, 8000, 8000, 8000]);
  for (let n = 0; n < 50; n++) assert.ok(conn.backoffMs(n) <= 8_000);
});

test('the reconnect backoff is the one policy: 500 ms doubling to 30 s, equal jitter', () => {
  assert.deepEqual({ ...BACKOFF }, { initialMs: 500, factor: 2, capMs: 30_000, jitter: 'equal' });
  const highest = setup().conn; // the defaults, random() = 1: the whole step
  const steps = [500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000];
  assert.deepEqual(steps.map((_, n) => highest.backoffMs(n)), steps);
  // Equal jitter: the lowest draw still waits half the step.
  const lowest = setup({ random: () => 0 }).conn;
  assert.deepEqual(steps.map((_, n) => lowest.backoffMs(n)), steps.map((s) => s / 2));
});

test('a successful handshake resets the backoff', async () => {
  const { conn, fake, timers } = setup({ baseBackoffMs: 500 });
  await conn.connect();
  fake.nativePorts[0].drop('Native host has exited.');
  timers.advance(500);
  await flush();
  fake.nativePorts[1].drop('Native host has exited.');
  assert.equal(conn.attempt, 2);
  timers.advance(1000);
  await flush();
  fake.nativePorts[2].push({ type: 'hello.ack', protocol: 2 });
  assert.equal(conn.state, 'ready');
  assert.equal(conn.attempt, 0);
});

test('no hello.ack in time is treated as a crashed host', async () => {
  const { conn, timers, fake } = setup({ helloTimeoutMs: 1000 });
  await conn.connect();
  timers.advance(1000);
  assert.equal(conn.state, 'host_crashed');
  assert.ok(fake.nativePorts[0].disconnected);
});

test('messages sent while connecting are queued and flushed after the handshake', async () => {
  const { conn, fake } = setup();
  await conn.connect();
  assert.equal(conn.send({ type: 'chat.list' }), 'queued');
  const port = fake.nativePorts[0];
  assert.equal(port.ofType('chat.list').length, 0);
  port.push({ type: 'hello.ack', protocol: 2 });
  assert.equal(port.ofType('chat.list').length, 1);
});

test('the queue is bounded and state listeners run before it is flushed', async () => {
  const { conn, fake, dropped } = setup({ queueLimit: 2 });
  /** @type {string[]} */
  const order = [];
  conn.addStateListener((s) => {
    if (s.state === 'ready') {
      conn.send({ type: 'session.start', sessionId: 'sp-1' });
      order.push('listener');
    }
  });
  await conn.connect();
  conn.send({ type: 'chat.send', sessionId: 'sp-1', text: 'a' });
  conn.send({ type: 'chat.send', sessionId: 'sp-1', text: 'b' });
  assert.equal(conn.send({ type: 'chat.send', sessionId: 'sp-1', text: 'c' }), 'dropped');
  assert.equal(dropped[0].reason, 'queue_full');
  fake.nativePorts[0].push({ type: 'hello.ack', protocol: 2 });
  const types = fake.nativePorts[0].posted.map((m) => m.type);
  assert.deepEqual(types, ['hello', 'session.start', 'chat.send', 'chat.send']);
});

test('messages are dropped at once when the host is missing', async () => {
  const { conn, fake, dropped } = setup();
  await conn.connect();
  fake.nativePorts[0].drop('Specified native messaging host not found.');
  assert.equal(conn.send({ type: 'chat.list' }), 'dropped');
  assert.equal(dropped[0].reason, 'host_missing');
});

test('close is idempotent and stops reconnecting', async () => {
  const { conn, fake, timers } = await readyConn();
  conn.close();
  conn.close();
  assert.equal(conn.state, 'disconnected');
  assert.ok(fake.nativePorts[0].disconnected);
  timers.advance(120_000);
  await flush();
  assert.equal(fake.nativePorts.length, 1);
  assert.equal(conn.send({ type: 'chat.list' }), 'dropped');
});
