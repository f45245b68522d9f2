// @ts-check
/**
 * The MCP clients driving this browser (protocol.md 4, capability `clients`), shown above the
 * chat: one row per client — its name, whether a call of it is running, how many tabs it holds —
 * with "Hand this tab" (`client.hand_tab`: the tab this panel's window shows becomes the client's),
 * "Take this tab back" (`client.take_tab`) and "Stop" (`client.stop`: its running call is cancelled, never repeated, and it must be
 * allowed again). Hidden while no client is connected.
 */

import { h } from './dom.js';
import { t } from './i18n.js';

/**
 * @typedef {object} ClientInfo
 * @property {string} clientId
 * @property {string} name
 * @property {boolean} busy
 * @property {number[]} tabs
 */

/**
 * @typedef {object} ClientsBarHooks
 * @property {(m: {type: string, [k: string]: any}) => void} send   to the host
 * @property {() => Promise<number | null>} activeTab                the tab this panel's window shows
 */

export class ClientsBar {
  /** @param {ClientsBarHooks} hooks */
  constructor(hooks) {
    this.hooks = hooks;
    this.el = h('section', { class: 'clients', 'aria-label': t('clientsLabel'), hidden: true });
    /** @type {ClientInfo[]} */
    this.clients = [];
  }

  /**
   * A `clients.list` arrived: show it.
   * @param {ClientInfo[]} clients
   */
  update(clients) {
    this.clients = Array.isArray(clients) ? clients : [];
    this.el.hidden = this.clients.length === 0;
    this.el.replaceChildren(...this.clients.map((c) => this.row(c)));
  }

  /** @param {ClientInfo} c */
  row(c) {
    const tabs = Array.isArray(c.tabs) ? c.tabs.length : 0;
    const state = c.busy ? t('clientWorking') : t('clientIdle');
    const hand = h('button', {
      type: 'button',
      class: 'ghost',
      'data-action': 'hand',
      text: t('clientHandTab'),
      title: t('clientHandTabTitle', c.name),
      onclick: async () => {
        const tabId = await this.hooks.activeTab();
        if (typeof tabId === 'number') this.hooks.send({ type: 'client.hand_tab', clientId: c.clientId, tabId });
      },
    });
    const take = h('button', {
      type: 'button',
      class: 'ghost',
      'data-action': 'take',
      hidden: tabs === 0,
      text: t('clientTakeTab'),
      title: t('clientTakeTabTitle', c.name),
      onclick: async () => {
        const tabId = await this.hooks.activeTab();
        if (typeof tabId === 'number') this.hooks.send({ type: 'client.take_tab', clientId: c.clientId, tabId });
      },
    });
    const stop = h('button', {
      type: 'button',
      class: 'stop',
      'data-action': 'stop',
      text: t('clientStop'),
      title: t('clientStopTitle', c.name),
      onclick: () => this.hooks.send({ type: 'client.stop', clientId: c.clientId }),
    });
    return h(
      'div',
      { class: `client${c.busy ? ' busy' : ''}`, 'data-client': c.clientId, 'data-tabs': JSON.stringify(c.tabs ?? []) },
      h('span', { class: 'client-name', text: t('clientUsing', c.name) }),
      h('span', { class: 'muted', text: `${state} · ${t('clientTabs', String(tabs))}` }),
      h('span', { class: 'client-actions' }, hand, take, stop),
    );
  }
}
