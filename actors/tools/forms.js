// In-page helpers of actors/tools/forms.py, evaluated in the page's main world (the page's own
// form state is what counts). forms.py sends this file with each call and then calls one of
// FORMS.<name>(...). `find` returns {el, group} or {error, fields}; a radio group is one field
// whose options are its radios. Secret values never leave the page (protocol.md section 5).
/*BROWY_SECRET_RULE*/
const squash = (s) => String(s || '').replace(/\s+/g, ' ').trim();
const formOf = (sel) => {
  if (sel) {
    const el = document.querySelector(sel);
    if (!el) throw new Error('NO_FORM: no element matches ' + sel);
    return el.tagName === 'FORM' ? el : (el.closest('form') || el);
  }
  return document.forms[0] || document.body;
};
const controls = (root) => (root.tagName === 'FORM' ? Array.from(root.elements)
  : Array.from(root.querySelectorAll('input, select, textarea, button')))
  .filter((e) => ['INPUT', 'SELECT', 'TEXTAREA', 'BUTTON'].includes(e.tagName));
const labelOf = (el) => {
  const by = el.getAttribute('aria-labelledby');
  if (by) {
    const t = by.split(/\s+/).map((id) => document.getElementById(id)).filter(Boolean)
      .map((n) => n.innerText).join(' ');
    if (squash(t)) return squash(t);
  }
  if (el.labels && el.labels.length) {
    // A label that wraps its control: its own words only, not the control's (a select's options).
    return squash(Array.from(el.labels).map((l) => {
      const c = l.cloneNode(true);
      c.querySelectorAll('input, select, textarea, button').forEach((n) => n.remove());
      return c.textContent;
    }).join(' '));
  }
  return squash(el.getAttribute('aria-label') || el.placeholder || el.title || '');
};
const secret = (el) => isSecretField(el);
const kind = (el) => el.tagName === 'SELECT' ? (el.multiple ? 'select-multiple' : 'select')
  : el.tagName === 'TEXTAREA' ? 'textarea' : el.tagName === 'BUTTON' ? 'button'
  : (el.type || 'text');
const keyOf = (el) => el.name || el.id || labelOf(el);
const optLabel = (o) => squash(o.label || o.textContent);
const match = (cands, key, get) => {
  const k = String(key), kl = k.trim().toLowerCase();
  return cands.filter((e) => get(e) === k).concat(cands.filter((e) => get(e).toLowerCase() === kl));
};
const find = (root, key) => {
  const cands = controls(root).filter((e) => e.tagName !== 'BUTTON' &&
    !['submit', 'reset', 'button', 'image', 'hidden'].includes(e.type));
  const kl = String(key).trim().toLowerCase();
  const hit = match(cands, key, (e) => e.name || '')[0] || match(cands, key, (e) => e.id || '')[0]
    || match(cands, key, labelOf)[0] ||
    match(cands, key, (e) => squash(e.getAttribute('aria-label') || e.placeholder || ''))[0] ||
    (kl ? cands.find((e) => labelOf(e).toLowerCase().includes(kl)) : null);
  if (!hit) {
    return { error: 'no field ' + JSON.stringify(key), fields: [...new Set(cands.map(keyOf))] };
  }
  const group = hit.type === 'radio' && hit.name ? cands.filter((e) => e.type === 'radio' &&
    e.name === hit.name && e.form === hit.form) : null;
  return { el: hit, group };
};
const point = (el) => {
  el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
  const r = el.getBoundingClientRect();
  if (r.width < 1 || r.height < 1) return null;
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const top = document.elementFromPoint(x, y);
  const ok = top && (top === el || el.contains(top) ||
    (top.tagName === 'LABEL' && top.control === el));
  return ok ? { x, y } : null;
};
const fire = (el) => {
  el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
};
const setValue = (el, v) => {
  const d = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), 'value');
  if (d && d.set) d.set.call(el, v); else el.value = v;
};

const FORMS = {
  // Which of these field keys (names, ids or labels, as fill_form takes them) are secrets.
  secretKeys: (sel, keys) => {
    let root;
    try { root = formOf(sel); } catch (e) { return keys.map(() => null); }
    return keys.map((k) => { const f = find(root, k); return f.el ? secret(f.el) : null; });
  },
  extract: (sel, limit) => {
    const roots = sel ? [formOf(sel)] : (document.forms.length ? Array.from(document.forms)
      : [document.body]);
    return roots.slice(0, 10).map((root, fi) => {
      const fields = [], seen = new Set(), buttons = [];
      for (const el of controls(root)) {
        if (el.tagName === 'BUTTON' || ['submit', 'reset', 'button', 'image'].includes(el.type)) {
          buttons.push({ text: squash(el.innerText || el.value || el.getAttribute('aria-label')),
                         type: el.type });
          continue;
        }
        if (fields.length >= limit) break;
        const f = { name: el.name || '', id: el.id || '', label: labelOf(el), type: kind(el),
                    required: !!el.required, disabled: !!el.disabled };
        if (el.type === 'radio') {
          const key = 'radio:' + (el.name || el.id);
          if (seen.has(key)) continue;
          seen.add(key);
          const group = el.name
            ? controls(root).filter((e) => e.type === 'radio' && e.name === el.name) : [el];
          f.options = group.map((r) => ({ value: r.value, label: labelOf(r), checked: r.checked }));
          const legend = el.closest('fieldset') && el.closest('fieldset').querySelector('legend');
          f.label = legend ? squash(legend.textContent) : '';
          f.value = (group.find((r) => r.checked) || {}).value || '';
          f.required = group.some((r) => r.required);
        } else if (el.type === 'checkbox') {
          f.value = el.checked;
        } else if (el.tagName === 'SELECT') {
          f.options = Array.from(el.options).slice(0, 50).map((o) => ({ value: o.value,
            label: optLabel(o), selected: o.selected }));
          f.value = el.multiple ? Array.from(el.selectedOptions).map((o) => o.value) : el.value;
        } else if (el.type === 'file') {
          f.value = Array.from(el.files || []).map((x) => x.name);
        } else {
          f.secret = secret(el);
          f.value = f.secret ? (el.value ? '(set, hidden)' : '') : String(el.value).slice(0, 300);
        }
        fields.push(f);
      }
      return { index: fi, id: root.id || '', name: root.getAttribute('name') || '',
               action: root.tagName === 'FORM' ? root.action : '',
               method: root.tagName === 'FORM' ? root.method : '', fields, buttons };
    });
  },
  // Prepares one field for input: text fields are focused with their content selected;
  // clickable ones return their centre; fields without a caret are set at once.
  prepare: (sel, key, want) => {
    const f = find(formOf(sel), key);
    if (f.error) return f;
    let el = f.el;
    const k = kind(el), sec = secret(el);
    if (el.disabled || el.readOnly) {
      return { error: 'the field is ' + (el.disabled ? 'disabled' : 'read-only') };
    }
    if (k === 'file') return { error: 'a file input: use upload_index' };
    if (k === 'radio') {
      const w = String(want).toLowerCase();
      el = f.group.find((r) => r.value === String(want)) ||
        f.group.find((r) => labelOf(r).toLowerCase() === w) ||
        f.group.find((r) => labelOf(r).toLowerCase().includes(w));
      if (!el) return { error: 'no option ' + JSON.stringify(want), options: f.group.map(labelOf) };
      if (el.checked) return { done: 'already ' + JSON.stringify(labelOf(el) || el.value) };
      return { click: point(el), label: labelOf(el) || el.value, key: 'radio' };
    }
    if (k === 'checkbox') {
      const on = want === true || /^(true|on|yes|1|checked)$/i.test(String(want));
      if (el.checked === on) return { done: 'already ' + (on ? 'checked' : 'unchecked') };
      return { click: point(el), label: on ? 'checked' : 'unchecked', key: 'checkbox' };
    }
    if (k === 'select' || k === 'select-multiple') {
      const wants = Array.isArray(want) ? want.map(String) : [String(want)];
      const picked = [];
      for (const w of wants) {
        const wl = w.trim().toLowerCase(), opts = Array.from(el.options);
        const o = opts.find((o) => o.value === w) ||
          opts.find((o) => optLabel(o).toLowerCase() === wl) ||
          opts.find((o) => optLabel(o).toLowerCase().includes(wl));
        if (!o) {
          const options = opts.slice(0, 30).map(optLabel);
          return { error: 'no option ' + JSON.stringify(w), options };
        }
        picked.push(o);
      }
      if (el.multiple) for (const o of el.options) o.selected = picked.includes(o);
      else el.value = picked[0].value;
      fire(el);
      return { done: 'selected ' + picked.map((o) => JSON.stringify(optLabel(o))).join(', ') };
    }
    if (['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range'].includes(k)) {
      setValue(el, String(want));
      fire(el);
      return el.value === String(want) ? { done: 'set to ' + JSON.stringify(el.value) }
        : { error: 'the browser refused the value ' + JSON.stringify(String(want)) };
    }
    el.scrollIntoView({ block: 'center', behavior: 'instant' });
    el.focus();
    try { el.select(); } catch (e) { setValue(el, ''); }
    if (document.activeElement !== el) return { error: 'the field did not take focus' };
    return { type: true, secret: sec };
  },
  finish: (sel, key, want, label) => {
    const f = find(formOf(sel), key);
    if (f.error) return { ok: false };
    let el = f.el;
    if (el.type === 'radio') el = f.group.find((r) => (labelOf(r) || r.value) === label) || el;
    if (el.type === 'checkbox') return { ok: el.checked === (label === 'checked') };
    if (el.type === 'radio') return { ok: el.checked };
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return { ok: el.value === want, length: el.value.length };
  },
  scriptClick: (sel, key, label) => {
    const f = find(formOf(sel), key);
    let el = f.el;
    if (el && el.type === 'radio') el = f.group.find((r) => (labelOf(r) || r.value) === label);
    if (el) el.click();
  },
  submitTarget: (sel, text) => {
    const form = formOf(sel);
    if (form.tagName !== 'FORM') throw new Error('NO_FORM: the page has no <form>');
    const btns = Array.from(form.elements).concat(Array.from(form.querySelectorAll('[type=submit]')))
      .filter((b) => (b.tagName === 'BUTTON' && (b.type || 'submit') === 'submit') ||
        (b.tagName === 'INPUT' && ['submit', 'image'].includes(b.type)));
    const tl = String(text || '').toLowerCase();
    const btn = tl ? btns.find((b) => squash(b.innerText || b.value).toLowerCase().includes(tl))
      : btns.find((b) => !b.disabled);
    if (tl && !btn) return { error: 'no submit button with text ' + JSON.stringify(text),
      buttons: btns.map((b) => squash(b.innerText || b.value)) };
    return { click: btn ? point(btn) : null, button: btn ? squash(btn.innerText || btn.value) : null,
             invalid: Array.from(form.elements).filter((e) => e.willValidate && !e.checkValidity())
               .map((e) => keyOf(e) + ': ' + e.validationMessage).slice(0, 20) };
  },
  requestSubmit: (sel) => { const form = formOf(sel); form.requestSubmit(); return true; },
};
