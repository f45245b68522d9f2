// @ts-check
/**
 * Which browser this extension runs in, by the names `browy doctor` uses (chrome, chromium, edge,
 * brave, vivaldi), from the User-Agent client hints' brands. Sent in the v2 `hello` (`browser`) so
 * a local client can pick its browser (`browy mcp --browser NAME`). "" when it cannot tell.
 */

/** @type {[RegExp, string][]} brand -> name; the first match wins (Chromium is in every brand list) */
const BRANDS = [
  [/Microsoft Edge/i, 'edge'],
  [/Brave/i, 'brave'],
  [/Vivaldi/i, 'vivaldi'],
  [/Google Chrome/i, 'chrome'],
  [/^Chromium$/i, 'chromium'],
];

/**
 * @param {{userAgentData?: {brands?: {brand: string}[]}, userAgent?: string} | undefined} nav
 * @returns {string}
 */
export function browserName(nav) {
  const brands = (nav?.userAgentData?.brands ?? []).map((b) => String(b.brand));
  for (const [pattern, name] of BRANDS) {
    if (brands.some((b) => pattern.test(b))) return name;
  }
  // No client hints (an older browser): the user agent string; Vivaldi says so there.
  const ua = String(nav?.userAgent ?? '');
  if (/Edg\//.test(ua)) return 'edge';
  if (/Vivaldi/.test(ua)) return 'vivaldi';
  if (/Chrome\//.test(ua)) return brands.length ? 'chromium' : 'chrome';
  return '';
}
