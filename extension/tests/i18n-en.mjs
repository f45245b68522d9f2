// @ts-check
/** Node tests: install the English table as the i18n fallback (pages use chrome.i18n instead). */
import { readFileSync } from 'node:fs';
import { useMessages } from '../lib/i18n.js';

export const EN_PATH = new URL('../_locales/en/messages.json', import.meta.url);
/** @type {import('../lib/i18n.js').MessageTable} */
export const EN = JSON.parse(readFileSync(EN_PATH, 'utf8'));
useMessages(EN);
