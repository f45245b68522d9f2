// @ts-check
/**
 * The extension's message-type table (protocol.md sections 2, 3 and 4; we speak v2).
 *
 * One table per direction. Each host -> extension type names who handles it in the
 * service worker:
 *   - "native": the NativeConnection itself (handshake, keepalive, protocol-level errors)
 *   - "cdp":    the CDP / tab executor (cdp.js)
 *   - "panel":  routed to the panel owning `sessionId`, broadcast when it has none (3b)
 * Each extension -> host type names who may originate it:
 *   - "sw":     only the service worker (hello, tool.result, cdp.event, download.*, ping/pong)
 *   - "panel":  a panel page (side panel, DevTools panel, options page) through its runtime port
 *
 * Types starting with "__" are panel-internal (SW <-> panel) and never cross the native port
 * (3b: "Never from the host").
 *
 * The shared fixtures in tests/fixtures/wire/ keep this table in step with `messages/`
 * (conventions item 14); extension/tests/protocol.test.mjs checks it.
 */

export const HOST_NAME = 'com.browy.host';
export const PROTOCOL_VERSION = 2;
/** The id fixed by the manifest's "key" (extension/.key.b64). */
export const EXTENSION_ID = 'kmfpcmoidebagkbcjhngabjpcgedcmna';

/** @typedef {'native' | 'cdp' | 'panel'} InboundHandler */
/** @typedef {'sw' | 'panel'} OutboundSource */

/** host -> extension. @type {Readonly<Record<string, InboundHandler>>} */
export const HOST_TO_EXT = Object.freeze({
  // v1 (section 3)
  'hello.ack': 'native',
  'session.ready': 'panel',
  'chat.delta': 'panel',
  'chat.tool_call': 'panel',
  'chat.tool_result': 'panel',
  'chat.done': 'panel',
  'chat.error': 'panel',
  'cdp.send': 'cdp',
  'tab.new': 'cdp',
  'tab.activate': 'cdp',
  'tab.list': 'cdp',
  'tab.getActive': 'cdp',
  'event.activity': 'panel',
  'auth.status': 'panel',
  'sdk.ready': 'panel',
  'models.list': 'panel',
  'models.current': 'panel',
  'chat.list.result': 'panel',
  'chat.history.result': 'panel',
  'chat.delete.result': 'panel',
  // v2 (section 4)
  'chat.queued': 'panel',
  'chat.replaced': 'panel',
  'tab.close': 'cdp',
  'cdp.cancel': 'cdp',
  'control.release': 'cdp',
  'approval.request': 'panel',
  'user.ask': 'panel',
  usage: 'panel',
  'config.result': 'panel',
  'doctor.result': 'panel',
  // v2, one tool run without the model (local clients such as `browy mcp`; a panel may too)
  'tool.call.result': 'panel',
  'tools.list.result': 'panel',
  // v2, capability `clients`: the MCP clients driving this browser
  'clients.list': 'panel',
  // v2: an image a tool produced, in pieces (`image.get`)
  'image.data': 'panel',
  ping: 'native',
  pong: 'native',
  error: 'native', // PROTOCOL_MISMATCH / ORIGIN_FORBIDDEN handled there; others routed to panels
});

/** extension -> host. @type {Readonly<Record<string, OutboundSource>>} */
export const EXT_TO_HOST = Object.freeze({
  // v1 (section 2)
  hello: 'sw',
  'session.start': 'panel',
  'session.end': 'panel',
  'chat.send': 'panel',
  'chat.cancel': 'panel',
  'history.clear': 'panel',
  'tool.result': 'sw',
  'cdp.event': 'sw',
  'auth.signin': 'panel',
  'models.list': 'panel',
  'models.set': 'panel',
  'chat.list': 'panel',
  'chat.history': 'panel',
  'chat.delete': 'panel',
  // v2 (section 4)
  'approval.response': 'panel',
  'user.answer': 'panel',
  'config.get': 'panel',
  'config.set': 'panel',
  'doctor.run': 'panel',
  'daemon.restart': 'panel',
  'image.get': 'panel',
  'tool.call': 'panel',
  'tools.list': 'panel',
  'client.stop': 'panel',
  'client.hand_tab': 'panel',
  'client.take_tab': 'panel',
  // v2, capability `downloads`: what chrome.downloads says of a download (lib/downloads.js)
  'download.started': 'sw',
  'download.done': 'sw',
  ping: 'sw',
  pong: 'sw',
});

/** Capabilities our hello announces (unknown ones are ignored by the host, section 4). */
export const EXTENSION_CAPABILITIES = Object.freeze([
  'approvals',
  'clients',
  'tab.groups',
  'user.ask',
  'cdp.cancel',
  'cdp.events.filtered',
  'tab.close',
  'control.release',
  'config',
  'doctor',
  // cdp.send/cdp.event may carry targetSessionId: a child session (out-of-process iframe) of the
  // tab, through chrome.debugger's DebuggerSession.sessionId (Chrome 125+).
  'cdp.targetSessions',
  // download.started / download.done: the downloads the browser makes (chrome.downloads).
  'downloads',
]);

/**
 * Is `type` a panel-internal message (never sent to the host)?
 * @param {unknown} type
 */
export function isInternalType(type) {
  return typeof type === 'string' && type.startsWith('__');
}

/**
 * May a panel send this message to the host? Unknown, SW-only and internal types are refused.
 * @param {unknown} msg
 * @returns {msg is {type: string, [k: string]: unknown}}
 */
export function isPanelToHost(msg) {
  if (!msg || typeof msg !== 'object') return false;
  const type = /** @type {{type?: unknown}} */ (msg).type;
  return typeof type === 'string' && EXT_TO_HOST[type] === 'panel';
}

/**
 * Who handles a host message; undefined for an unknown type (logged and ignored, section 1).
 * @param {unknown} type
 * @returns {InboundHandler | undefined}
 */
export function inboundHandler(type) {
  if (typeof type !== 'string' || isInternalType(type)) return undefined;
  return Object.prototype.hasOwnProperty.call(HOST_TO_EXT, type) ? HOST_TO_EXT[type] : undefined;
}
