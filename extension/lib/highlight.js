// @ts-check
/**
 * Syntax highlighting of code blocks with highlight.js (vendored: vendor/highlight.core.js and a
 * handful of languages, vendor/hljs-*.js; see vendor/README.md). Pure: text in, HTML out, no DOM,
 * so node tests run it. The caller sanitizes the HTML again before it reaches innerHTML
 * (rich-text.js): highlight.js escapes the code it is given, the sanitizer makes sure of it.
 *
 * Only a block whose fence names a known language (```js, ```python, …) is highlighted; there is
 * no guessing, so plain output and logs stay plain. The colours are in panel.css (.hljs-…).
 */

import hljs from '../vendor/highlight.core.js';
import bash from '../vendor/hljs-bash.js';
import css from '../vendor/hljs-css.js';
import diff from '../vendor/hljs-diff.js';
import javascript from '../vendor/hljs-javascript.js';
import json from '../vendor/hljs-json.js';
import markdown from '../vendor/hljs-markdown.js';
import python from '../vendor/hljs-python.js';
import shell from '../vendor/hljs-shell.js';
import sql from '../vendor/hljs-sql.js';
import typescript from '../vendor/hljs-typescript.js';
import xml from '../vendor/hljs-xml.js';
import yaml from '../vendor/hljs-yaml.js';

/** Registered under these names; each brings its own aliases (js, ts, py, sh, html, yml, …). */
const LANGUAGES = { bash, css, diff, javascript, json, markdown, python, shell, sql, typescript, xml, yaml };
for (const [name, definition] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, definition);

/**
 * The language a fenced block names, from its code element's class list (marked writes
 * `language-<info string>`), lower-cased; '' when it names none.
 * @param {string} className
 */
export function fenceLanguage(className) {
  const match = /(?:^|\s)language-(\S+)/.exec(className);
  return match ? match[1].toLowerCase() : '';
}

/**
 * Highlight `code` as `language` (a name or an alias).
 * @param {string} code
 * @param {string} language
 * @returns {{html: string, language: string} | null} null for an unknown or missing language
 */
export function highlightCode(code, language) {
  const lang = language ? hljs.getLanguage(language) : undefined;
  if (!lang) return null;
  const result = hljs.highlight(code, { language, ignoreIllegals: true });
  return { html: result.value, language: lang.name ?? language };
}

/** The registered languages' names (for tests and the README). */
export function knownLanguages() {
  return hljs.listLanguages();
}
