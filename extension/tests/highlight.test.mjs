// @ts-check
/** Code highlighting (lib/highlight.js over the vendored highlight.js): pure text -> HTML. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fenceLanguage, highlightCode, knownLanguages } from '../lib/highlight.js';

test('the fence language comes from marked\'s language-… class, lower-cased', () => {
  assert.equal(fenceLanguage('language-js'), 'js');
  assert.equal(fenceLanguage('hljs language-Python'), 'python');
  assert.equal(fenceLanguage(''), '');
  assert.equal(fenceLanguage('nolanguage-js'), '');
});

test('a known language is highlighted with hljs- classes', () => {
  const out = highlightCode('const answer = 42; // why', 'js');
  assert.ok(out);
  assert.equal(out.language, 'JavaScript');
  assert.match(out.html, /<span class="hljs-keyword">const<\/span>/);
  assert.match(out.html, /<span class="hljs-number">42<\/span>/);
  assert.match(out.html, /<span class="hljs-comment">\/\/ why<\/span>/);
});

test('the common fence names and aliases are all known', () => {
  for (const name of ['js', 'javascript', 'ts', 'typescript', 'py', 'python', 'sh', 'bash', 'shell', 'console', 'json', 'html', 'xml', 'css', 'sql', 'yaml', 'yml', 'md', 'markdown', 'diff']) {
    assert.ok(highlightCode('x', name), name);
  }
  assert.deepEqual(knownLanguages().sort(), ['bash', 'css', 'diff', 'javascript', 'json', 'markdown', 'python', 'shell', 'sql', 'typescript', 'xml', 'yaml']);
});

test('no language or an unknown one is left alone (no guessing)', () => {
  assert.equal(highlightCode('just some output', ''), null);
  assert.equal(highlightCode('10 PRINT "HI"', 'basic-of-doom'), null);
});

test('markup inside code comes out escaped, and the only tags are spans with a class', () => {
  const attack = '<img src=x onerror="alert(1)"><script>alert(2)</script>';
  for (const lang of ['html', 'js', 'python', 'markdown']) {
    const out = highlightCode(`${attack}\n"${attack}"`, lang);
    assert.ok(out, lang);
    assert.ok(!out.html.includes('<img') && !out.html.includes('<script'), `${lang}: ${out.html}`);
    const tags = out.html.match(/<[^>]*>/g) ?? [];
    assert.deepEqual(tags.filter((tag) => !/^<\/span>$|^<span class="[a-z_ -]+">$/.test(tag)), [], lang);
  }
});
