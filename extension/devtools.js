// @ts-check
/** DevTools page: adds the "Browy" panel. */

import { t } from './lib/i18n.js';

const chromeApi = /** @type {any} */ (globalThis).chrome;
chromeApi.devtools?.panels?.create(t('devtoolsPanelTitle'), '', 'devtools-panel.html');
