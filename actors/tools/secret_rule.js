// The one rule for "this field holds a secret" (protocol.md section 5). actors/tools/
// secret_rule.py fills SECRET_RULE from secret_fields.json and inserts this text into the page
// scripts that need it (snapshot.js, forms.js, the masking probe), so the page and the host
// judge a field the same way: its type, its autocomplete tokens (one-time-code,
// current-password, cc-number, ...), inputmode=numeric with a code-like name, and, as a
// fallback, its name, id, label, placeholder or aria-label.
const SECRET_RULE = __SECRET_RULE__;
const SECRET_NAME_RE = new RegExp(SECRET_RULE.name_pattern, 'i');
const SECRET_CODE_RE = new RegExp(SECRET_RULE.code_pattern, 'i');
function isSecretField(el) {
  if (!el || (el.tagName !== 'INPUT' && el.tagName !== 'TEXTAREA')) return false;
  if (SECRET_RULE.types.includes(String(el.type || '').toLowerCase())) return true;
  const ac = String(el.getAttribute('autocomplete') || '').toLowerCase().split(/\s+/);
  if (ac.some((t) => SECRET_RULE.autocomplete.includes(t))) return true;
  let words = [el.name, el.id, el.getAttribute('aria-label'), el.placeholder].join(' ');
  if (el.labels) for (const l of el.labels) words += ' ' + l.textContent;
  if (String(el.getAttribute('inputmode') || '') === 'numeric' && SECRET_CODE_RE.test(words)) {
    return true;
  }
  return SECRET_NAME_RE.test(words);
}
function deepActiveElement() {
  let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
  return el;
}
