// Browy field check: did typing into a field do what was asked?
//
// Evaluated after snapshot.js in the same isolated world (it reaches elements through
// `__browy.element`). `remember(idx, token)` keeps the field's value before the keys go in; after
// them, `typed(idx, token, text, clear)` compares what the field holds with what was typed:
//  - the same: done;
//  - the same letters and digits, formatted (a phone or card mask, a thousands separator): done,
//    and it says how the field shows it;
//  - a field whose value comes from a picker (date, time, datetime-local, month, week, color,
//    range) or a number field that did not take the keys: the value the browser's own picker
//    would set is set, with `input` and `change` (both bubble, as the browser's do), when the
//    text can be read as one; else not done, saying what the field takes; a slider that keeps to
//    its min, max and step and so holds another number is not done, saying what it holds;
//  - anything else: not done, with what the field now holds.
// A secret field's value never leaves the page: only whether it matches.
(() => {
  'use strict';
  if (globalThis.__browyField) return;

  const PICKER = { date: 'a date as YYYY-MM-DD', time: 'a time as HH:MM',
    'datetime-local': 'a date and time as YYYY-MM-DDTHH:MM', month: 'a month as YYYY-MM',
    week: 'a week as YYYY-Www', color: 'a colour as #rrggbb', range: 'a number',
    number: 'a number' };
  const before = new WeakMap();
  const alnum = (s) => String(s).toLowerCase().replace(/[^\p{L}\p{N}]/gu, '');
  const pad = (n) => String(n).padStart(2, '0');
  const valueOf = (el) => ('value' in el ? el.value : el.textContent) ?? '';

  function remember(idx, token) {
    const el = __browy.element(idx, token);
    before.set(el, valueOf(el));
    return true;
  }

  function ymd(d) { return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()); }
  function parsed(t) {
    const d = new Date(t);
    return Number.isNaN(d.getTime()) ? null : d;
  }

  // The value the browser's own picker would set for `text`, or null if it cannot be read.
  function pickerValue(type, text) {
    const t = text.trim();
    let m;
    switch (type) {
      case 'number': case 'range': {
        const n = t.replace(/[\s,_']/g, '');
        return /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(n) ? n : null;
      }
      case 'color':
        if ((m = /^#?([0-9a-f]{6})$/i.exec(t))) return '#' + m[1].toLowerCase();
        if ((m = /^#?([0-9a-f])([0-9a-f])([0-9a-f])$/i.exec(t))) {
          return ('#' + m[1] + m[1] + m[2] + m[2] + m[3] + m[3]).toLowerCase();
        }
        return null;
      case 'date': {
        if (/^\d{4}-\d{2}-\d{2}$/.test(t)) return t;
        const d = parsed(t);
        return d && ymd(d);
      }
      case 'month': {
        if (/^\d{4}-\d{2}$/.test(t)) return t;
        const d = parsed(t);
        return d && ymd(d).slice(0, 7);
      }
      case 'week':
        return (m = /^(\d{4})-?w(\d{2})$/i.exec(t)) ? m[1] + '-W' + m[2] : null;
      case 'time': {
        m = /^(\d{1,2})[:.](\d{2})(?::(\d{2}))?\s*([ap])?\.?\s*m?\.?$/i.exec(t);
        if (!m) return null;
        let h = Number(m[1]);
        if (m[4]) h = (h % 12) + (m[4].toLowerCase() === 'p' ? 12 : 0);
        return pad(h) + ':' + m[2] + (m[3] ? ':' + m[3] : '');
      }
      case 'datetime-local': {
        if ((m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(:\d{2})?)$/.exec(t))) return m[1] + 'T' + m[2];
        const d = parsed(t);
        return d && ymd(d) + 'T' + pad(d.getHours()) + ':' + pad(d.getMinutes());
      }
      default:
        return null;
    }
  }

  function typed(idx, token, text, clear) {
    const el = __browy.element(idx, token);
    const secret = /^\[\d+\] password|\ssecret(\s|$)/.test(__browy.lineFor(el));
    const shows = (v) => (secret ? null : v);
    const was = before.has(el) ? before.get(el) : '';
    const want = clear ? text : was + text;
    const now = valueOf(el);
    if (now === want) return { done: true };
    const type = el.tagName === 'INPUT' ? el.type : '';
    if (PICKER[type]) {
      const v = pickerValue(type, text);
      if (v !== null) {
        el.value = v;
        if ((type === 'range' || type === 'number') && el.value !== '' && Number(el.value) !== Number(v)) {
          // A slider keeps to its min, max and step: it moved, but not to what was asked.
          el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
          el.dispatchEvent(new Event('change', { bubbles: true }));
          return { done: false, shows: shows(el.value),
            why: 'this ' + type + ' field keeps to min ' + (el.min || 'none') + ', max ' +
              (el.max || 'none') + ', step ' + (el.step || '1') + ', so it moved to the nearest value' };
        }
        if (el.value !== '') {
          el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
          el.dispatchEvent(new Event('change', { bubbles: true }));
          return { done: true, fixed: true, shows: shows(el.value) };
        }
      }
      return { done: false, shows: shows(now), why: 'this ' + type + ' field takes ' + PICKER[type] };
    }
    if (alnum(want) && alnum(now) === alnum(want)) return { done: true, shows: shows(now) };
    const why = now === was ? 'the field did not change'
      : 'the field holds something else than what was typed (it may limit or reformat input)';
    return { done: false, shows: shows(now), why };
  }

  Object.defineProperty(globalThis, '__browyField', {
    value: Object.freeze({ remember, typed }), writable: false, enumerable: false,
  });
})()
