// @ts-check
/**
 * Downloads the browser makes, told to the host (protocol.md section 4, capability `downloads`).
 *
 * A page starts downloads that no URL can fetch again (a `blob:` link its script made, a form
 * POST answered with a file). Chrome saves them in the user's download folder; the host copies
 * the finished file into its files sandbox when the agent asks. So, on a v2 connection whose
 * host lists `downloads` in its hello.ack:
 *
 *   chrome.downloads.onCreated            -> download.started {downloadId, url, finalUrl, referrer, mime, startTime}
 *   chrome.downloads.onChanged (state ->  -> download.done    {... , state, filename (the absolute
 *     complete | interrupted)                                   path Chrome wrote), bytes, error?}
 *
 * onChanged carries only the changed fields (a DownloadDelta), so the whole DownloadItem is read
 * with chrome.downloads.search({id}) at the end. Never sent: on protocol 1 (the v1 wire has no
 * such message), to a host that did not offer the capability, for incognito downloads, and for
 * downloads made by our own pages (a chat export).
 *
 * Listeners are added in start(), which sw.js runs synchronously at the top level, so a stopped
 * worker woken by a download event gets it (MV3).
 */

/** @typedef {{type: string, [k: string]: any}} Msg */

/**
 * @typedef {object} DownloadConn
 * @property {number} protocol                 the protocol our hello offers
 * @property {Msg | null} serverHello          the last hello.ack (null before the first)
 * @property {(msg: Msg) => unknown} send      queued while (re)connecting
 */

export const DOWNLOADS_CAPABILITY = 'downloads';

export class DownloadReporter {
  /** @param {{chromeApi: any, conn: DownloadConn}} opts */
  constructor(opts) {
    this.chromeApi = opts.chromeApi;
    this.conn = opts.conn;
    const id = this.chromeApi.runtime?.id ?? '';
    /** URLs of our own pages' downloads (a chat export): not the agent's business. */
    this.ownPrefixes = id ? [`chrome-extension://${id}/`, `blob:chrome-extension://${id}/`] : [];
  }

  /** Listen to chrome.downloads (no-op without the permission). */
  start() {
    const api = this.chromeApi.downloads;
    if (!api) return;
    api.onCreated?.addListener((/** @type {any} */ item) => this.created(item));
    api.onChanged?.addListener((/** @type {any} */ delta) => void this.changed(delta));
  }

  /** May download.* go to the host? v2 only, and only to a host that offered the capability. */
  enabled() {
    if (this.conn.protocol < 2) return false;
    const ack = this.conn.serverHello;
    if (!ack) return true; // not connected yet: queued; checked again by the next event
    return Array.isArray(ack.capabilities) && ack.capabilities.includes(DOWNLOADS_CAPABILITY);
  }

  /** @param {any} item a DownloadItem */
  reportable(item) {
    if (!item || typeof item.id !== 'number' || item.incognito) return false;
    const url = String(item.url ?? '');
    return !this.ownPrefixes.some((p) => url.startsWith(p));
  }

  /** @param {any} item a DownloadItem (onCreated) */
  created(item) {
    if (!this.enabled() || !this.reportable(item)) return;
    this.conn.send({ type: 'download.started', ...common(item) });
  }

  /**
   * A download changed: when it ended (complete or interrupted), tell the host the whole item.
   * @param {any} delta a DownloadDelta
   */
  async changed(delta) {
    const state = delta?.state?.current;
    if (state !== 'complete' && state !== 'interrupted') return;
    if (!this.enabled()) return;
    let item;
    try {
      [item] = await this.chromeApi.downloads.search({ id: delta.id });
    } catch (e) {
      console.warn('[browy] downloads.search failed', e);
      return;
    }
    if (!this.reportable(item)) return;
    /** @type {Msg} */
    const msg = {
      type: 'download.done',
      ...common(item),
      state,
      filename: String(item.filename ?? ''),
      // fileSize: the file on disk (-1 if unknown); bytesReceived counts the transfer.
      bytes: typeof item.fileSize === 'number' && item.fileSize >= 0 ? item.fileSize : Number(item.bytesReceived ?? 0),
    };
    if (state === 'interrupted') msg.error = String(item.error ?? delta.error?.current ?? 'interrupted');
    this.conn.send(msg);
  }
}

/** @param {any} item */
function common(item) {
  return {
    downloadId: item.id,
    url: String(item.url ?? ''),
    finalUrl: String(item.finalUrl ?? item.url ?? ''),
    referrer: String(item.referrer ?? ''),
    mime: String(item.mime ?? ''),
    startTime: String(item.startTime ?? ''),
  };
}
