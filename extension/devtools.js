// @ts-check
/** DevTools page: adds the "Browy" panel. */

const chromeApi = /** @type {any} */ (globalThis).chrome;
chromeApi.devtools?.panels?.create('Browy', '', 'devtools-panel.html');
