// @ts-check
import { test } from 'node:test';
import assert from 'node:assert/strict';
import './i18n-en.mjs';
import { createFakeChrome, createFakeTimers, flush } from './fake-chrome.mjs';
import { createBackground } from '../lib/background.js';
import { DownloadReporter } from '../lib/downloads.js';
import { EXTENSION_CAPABILITIES } from '../lib/protocol.js';

const ITEM = {
  id: 7, url: 'blob:http://127.0.0.1:8000/0f1e', finalUrl: 'blob:http://127.0.0.1:8000/0f1e',
  referrer: 'http://127.0.0.1:8000/export.html', mime: 'text/csv', startTime: '2026-12-01T20:00:00.000Z',
  state: 'in_progress', filename: '', fileSize: 10, bytesReceived: 0, incognito: false,
};

/** A worker whose native connection is ready, the host's hello.ack offering `caps`. */
async function readyWorker(caps = ['downloads'], protocol = 2) {
  const fake = createFakeChrome();
  const timers = createFakeTimers();
  const bg = createBackground({ chromeApi: fake.chrome, native: { timers, random: () => 1, protocol } });
  bg.start();
  await flush();
  const port = fake.nativePorts.at(-1);
  assert.ok(port);
  port.push(protocol < 2 ? { type: 'hello.ack', protocol: 1, serverVersion: '0.1.0' }
    : { type: 'hello.ack', protocol: 2, serverVersion: '0.1.0', capabilities: caps });
  await flush();
  return { fake, bg, port };
}

/** Chrome finishes download `item` the way it does: onChanged with the state delta only. */
async function finish(fake, item, state = 'complete', extra = {}) {
  fake.downloads.set(item.id, { ...item, state, ...extra });
  fake.chrome.downloads.onChanged.emit({ id: item.id, state: { previous: 'in_progress', current: state } });
  await flush();
}

test('the hello offers the downloads capability', () => {
  assert.ok(EXTENSION_CAPABILITIES.includes('downloads'));
});

test('a download the page starts is told to a v2 host when it begins and when it completes', async () => {
  const { fake, port } = await readyWorker();
  fake.downloads.set(ITEM.id, { ...ITEM });
  fake.chrome.downloads.onCreated.emit({ ...ITEM });
  await finish(fake, ITEM, 'complete', { filename: '/home/u/Downloads/report.csv', bytesReceived: 10 });
  assert.deepEqual(port.ofType('download.started'), [{
    type: 'download.started', downloadId: 7, url: ITEM.url, finalUrl: ITEM.finalUrl,
    referrer: ITEM.referrer, mime: 'text/csv', startTime: ITEM.startTime,
  }]);
  assert.deepEqual(port.ofType('download.done'), [{
    type: 'download.done', downloadId: 7, url: ITEM.url, finalUrl: ITEM.finalUrl,
    referrer: ITEM.referrer, mime: 'text/csv', startTime: ITEM.startTime,
    state: 'complete', filename: '/home/u/Downloads/report.csv', bytes: 10,
  }]);
});

test('an interrupted download is told with its reason; other changes are not told', async () => {
  const { fake, port } = await readyWorker();
  fake.downloads.set(ITEM.id, { ...ITEM });
  fake.chrome.downloads.onChanged.emit({ id: ITEM.id, filename: { previous: '', current: '/x/report.csv' } });
  await flush();
  assert.equal(port.ofType('download.done').length, 0);
  await finish(fake, ITEM, 'interrupted', { error: 'NETWORK_FAILED', fileSize: -1, bytesReceived: 3 });
  const [done] = port.ofType('download.done');
  assert.equal(done.state, 'interrupted');
  assert.equal(done.error, 'NETWORK_FAILED');
  assert.equal(done.bytes, 3);
});

test('a v1 connection never carries download messages (the v1 wire is unchanged)', async () => {
  const { fake, port } = await readyWorker([], 1);
  fake.chrome.downloads.onCreated.emit({ ...ITEM });
  await finish(fake, ITEM, 'complete', { filename: '/x/report.csv' });
  assert.deepEqual(port.posted.filter((m) => String(m.type).startsWith('download.')), []);
  assert.equal(port.posted[0].protocol, 1);
});

test('a v2 host that does not offer downloads is not sent them', async () => {
  const { fake, port } = await readyWorker(['approvals']);
  fake.chrome.downloads.onCreated.emit({ ...ITEM });
  await finish(fake, ITEM, 'complete', { filename: '/x/report.csv' });
  assert.deepEqual(port.posted.filter((m) => String(m.type).startsWith('download.')), []);
});

test('incognito downloads and our own pages\' downloads (a chat export) are not told', () => {
  /** @type {any[]} */ const sent = [];
  const fake = createFakeChrome();
  const r = new DownloadReporter({ chromeApi: fake.chrome, conn: { protocol: 2, serverHello: null, send: (m) => sent.push(m) } });
  r.created({ ...ITEM, incognito: true });
  r.created({ ...ITEM, url: `blob:chrome-extension://${fake.chrome.runtime.id}/abc` });
  r.created({ ...ITEM, url: `chrome-extension://${fake.chrome.runtime.id}/x.md` });
  assert.deepEqual(sent, []);
  r.created({ ...ITEM });
  assert.equal(sent.length, 1);
});

test('a download that ends before the host is connected goes to the connection, which queues it', async () => {
  /** @type {any[]} */ const sent = [];
  const fake = createFakeChrome();
  const r = new DownloadReporter({ chromeApi: fake.chrome, conn: { protocol: 2, serverHello: null, send: (m) => sent.push(m) } });
  fake.downloads.set(ITEM.id, { ...ITEM, state: 'complete', filename: '/x/r.csv' });
  await r.changed({ id: ITEM.id, state: { previous: 'in_progress', current: 'complete' } });
  assert.equal(sent[0]?.type, 'download.done');
});
