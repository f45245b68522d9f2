// Browy in-page indexer.
//
// Evaluated once (Runtime.evaluate with contextId) in an ISOLATED WORLD created by
// Page.createIsolatedWorld on the main frame. An isolated world shares the DOM with the page but
// has its own JS globals, so page scripts cannot see or tamper with `__browy`, and we never write
// attributes into the page: element identity is a WeakMap (element -> index) plus a Map
// (index -> WeakRef) held here. A new document gets a new world, hence a new random `token`;
// an index presented with another token is STALE_REF.
//
// An index also stands for what the model was last shown: the role and accessible name of its line
// in the newest snapshot that listed it (or the `now:` line after an action on it). A node that
// shows something else since (a virtualised list recycling its row elements after the snapshot
// the model is using) is STALE_REF "element [n] now shows X, was Y" rather than a click on the
// other row; once a newer snapshot lists [n] showing the new row, [n] means that row. Controls
// whose text is their value (fields, comboboxes, popup buttons showing their choice) are keyed by
// role only, and value/state changes never count.
//
// Cross-origin frames: this world cannot read them. A snapshot numbers each such <iframe> it meets
// (a frame slot, kept for the document) and returns the visible ones with their content boxes in
// top-viewport pixels (`frames`); the host runs this same script in an isolated world of each
// frame (its own session for an out-of-process one) with `opts.frame` = {slot, x, y, vh}: there
// indices start at slot * 100000 + 1, positions are mapped to the top viewport and only the
// lines are returned. `frameBox(slot, token)` gives a frame's content box at action time. A frame
// world lists the cross-origin frames inside it too (boxes in its own viewport's pixels); each
// gets a slot of the top document's from `nestedSlot` and is walked the same way, one level
// down.
//
// Closed shadow roots (attachShadow({mode: 'closed'})) are out of reach of every script, ours
// included, but not of the DOM domain: a snapshot reports the hosts that may have one and that it
// has not asked about (custom elements, and empty boxes of the tags that can host a root); the host
// finds their roots with DOM.describeNode{pierce} and hands each one to this world (`adoptRoot`),
// and the snapshot is taken again. From then on they are walked, hit-tested and clicked like open
// ones (a click check listens on the root itself: a closed root hides its inside from the path a
// listener outside sees).
//
// Controls behind an open modal (a showModal() <dialog>, an `inert` ancestor, or a visible
// aria-modal overlay covering the viewport) cannot be clicked: scope="viewport" leaves them out
// and says how many, scope="all" lists them with the state `inert`.
//
// Clicks are verified: resolve(..., arm=true) arms a one-time capturing click listener (this
// world's, invisible to the page) and clicked() reads back whether the trusted click event's
// composedPath() contained the element, and if not what it hit; a press and release with no
// click between them while the element is still shown (it moved under the pointer) is a miss too.
//
// Performance notes (goal: <= 50 ms at 1,000 controls, <= 100 ms at 5,000, cold):
//  - candidates come from one native querySelectorAll per root; a second '*' pass only looks for
//    open shadow roots, same-origin iframes and cursor:pointer leaves;
//  - all reads happen after the DOM is stable, so layout is computed once and every
//    getBoundingClientRect is a cheap read (no writes in between: no layout thrash);
//  - visibility uses Element.checkVisibility() (Chromium 105+) rather than getComputedStyle.
(() => {
  'use strict';
  if (globalThis.__browy) return globalThis.__browy.token;

  const NATIVE = 'a[href],area[href],button,input:not([type=hidden]),select,textarea,summary,' +
    '[contenteditable]:not([contenteditable=false]),[role=button],[role=link],[role=checkbox],' +
    '[role=radio],[role=tab],[role=menuitem],[role=menuitemcheckbox],[role=menuitemradio],' +
    '[role=option],[role=switch],[role=combobox],[role=textbox],[role=searchbox],[role=slider],' +
    '[role=spinbutton],[role=treeitem],[onclick],[tabindex]:not([tabindex="-1"])';
  const ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'tab', 'menuitem',
    'menuitemcheckbox', 'menuitemradio', 'option', 'switch', 'combobox', 'textbox', 'searchbox',
    'slider', 'spinbutton', 'treeitem', 'listbox']);
  // Tags that may be a cursor:pointer "looks clickable" element (divs with JS click handlers).
  const POINTERISH = new Set(['DIV', 'SPAN', 'LI', 'IMG', 'SVG', 'svg', 'I', 'TD', 'TH', 'TR', 'P',
    'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'LABEL', 'FIGURE', 'ARTICLE', 'SECTION', 'DT', 'DD', 'B',
    'STRONG', 'EM', 'SMALL']);
  const INPUT_ROLE = {
    text: 'textbox', email: 'textbox', tel: 'textbox', url: 'textbox', search: 'searchbox',
    password: 'password', number: 'spinbutton', range: 'slider', checkbox: 'checkbox',
    radio: 'radio', submit: 'button', button: 'button', reset: 'button', image: 'button',
    file: 'file', date: 'date', 'datetime-local': 'datetime', month: 'month', week: 'week',
    time: 'time', color: 'color',
  };
  const KIND = {
    link: 'link', button: 'button', checkbox: 'toggle', radio: 'toggle', switch: 'toggle',
    menuitemcheckbox: 'toggle', menuitemradio: 'toggle',
  };
  const FIELD_TAGS = new Set(['INPUT', 'SELECT', 'TEXTAREA']);
  // Roles whose visible text is (or contains) their value: an index of one is keyed by role only.
  const VALUED = new Set(['combobox', 'listbox', 'textbox', 'searchbox', 'spinbutton', 'slider',
    'password', 'file', 'date', 'datetime', 'month', 'week', 'time', 'color']);
  const MASK = '••••';
  /*BROWY_SECRET_RULE*/

  const rand = new Uint8Array(6);
  crypto.getRandomValues(rand);
  const state = {
    token: Array.from(rand, (b) => b.toString(16).padStart(2, '0')).join(''),
    next: 1,
    byEl: new WeakMap(),     // element -> index
    byIdx: new Map(),        // index -> WeakRef(element)
    shots: 0,
    lastFirst: true,
    nav: { count: 0, url: '', sameDocument: false },
    seen: new Map(),         // index -> 'role "name"' of its newest listed line (see key())
    armed: null,             // the pending click check: { rec, off }
    closedRoots: new WeakMap(),  // host -> its closed ShadowRoot, handed in by the host
    frameSlot: new WeakMap(),    // cross-origin <iframe> -> its slot
    frameEls: new Map(),         // slot -> WeakRef(<iframe>), or null: a frame inside a frame
    nested: new Map(),           // slot of a frame inside a frame -> [its frame's slot, its slot there]
    asked: new WeakSet(),        // hosts the host was asked about (whatever the answer)
    unasked: [],                 // hosts the last snapshot found that nobody asked about yet
  };

  // Tags that may host a shadow root (besides custom elements): asked about only when empty.
  const SHADOW_TAGS = new Set(['DIV', 'SPAN', 'SECTION', 'ARTICLE', 'ASIDE', 'HEADER', 'FOOTER',
    'MAIN', 'NAV', 'P', 'BLOCKQUOTE', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6']);
  const shadowOf = (el) => el.shadowRoot || state.closedRoots.get(el) || null;
  function maybeClosedHost(el) {
    if (state.asked.has(el)) return false;
    if (el.localName.includes('-')) return true;
    return el.firstChild === null && SHADOW_TAGS.has(el.tagName);
  }

  // The Navigation API fires `navigate` synchronously when a navigation starts in this frame
  // (link click, form submit, location change), before the old document goes away: we use it to
  // tell the host "this action started a navigation".
  try {
    globalThis.navigation.addEventListener('navigate', (e) => {
      // A link with `download` (a blob: export) starts a download, not a navigation: the
      // document stays, and so do its element numbers.
      if (e.downloadRequest != null) return;
      state.nav = { count: state.nav.count + 1, url: e.destination.url,
        sameDocument: !!e.destination.sameDocument };
    });
  } catch (_) { /* no Navigation API: the host falls back to comparing URLs and loaderIds */ }

  const clip = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);
  const squash = (s) => (s ? s.replace(/\s+/g, ' ').trim() : '');

  function labelText(label, ctl) {
    // The label's text without the text of the controls inside it (a <select> in a <label>
    // would otherwise contribute all its options).
    let out = '';
    for (const n of label.childNodes) {
      if (n.nodeType === 3) out += n.data;
      else if (n.nodeType === 1 && n !== ctl && !FIELD_TAGS.has(n.tagName) && n.tagName !== 'BUTTON') {
        out += ' ' + (n.tagName === 'LABEL' ? '' : n.textContent);
      }
    }
    return out;
  }

  // el.labels is O(document) per call in Chromium (it scans the tree for label[for]), which made
  // scope="all" quadratic; instead index label[for] once per root and snapshot.
  let labelIndex = new WeakMap();
  function labelsOf(el) {
    const out = [];
    const wrap = el.closest('label');
    if (wrap && (!wrap.htmlFor || wrap.htmlFor === el.id)) out.push(wrap);
    if (el.id) {
      const root = el.getRootNode();
      let byId = labelIndex.get(root);
      if (!byId) {
        byId = new Map();
        for (const l of root.querySelectorAll('label[for]')) {
          const list = byId.get(l.htmlFor);
          if (list) list.push(l); else byId.set(l.htmlFor, [l]);
        }
        labelIndex.set(root, byId);
      }
      for (const l of byId.get(el.id) || []) if (l !== wrap) out.push(l);
    }
    return out;
  }

  function nameOf(el, tag, role) {
    let n = el.getAttribute('aria-label');
    if (n && n.trim()) return n;
    const lb = el.getAttribute('aria-labelledby');
    if (lb) {
      const root = el.getRootNode();
      n = lb.split(/\s+/).map((id) => {
        const t = root.getElementById ? root.getElementById(id) : null;
        return t ? t.textContent : '';
      }).join(' ');
      if (n.trim()) return n;
    }
    if (FIELD_TAGS.has(tag)) {
      const type = el.type;
      if (tag === 'INPUT' && (type === 'submit' || type === 'button' || type === 'reset')) {
        return el.value || (type === 'submit' ? 'Submit' : type === 'reset' ? 'Reset' : '');
      }
      if (tag === 'INPUT' && type === 'image') return el.alt || el.title || 'Submit';
      const labels = labelsOf(el);
      if (labels.length) {
        n = '';
        for (const l of labels) n += ' ' + labelText(l, el);
        if (n.trim()) return n;
      }
      return el.getAttribute('placeholder') || el.getAttribute('aria-placeholder') ||
        el.title || el.name || '';
    }
    if (role === 'textbox' || role === 'searchbox') {
      return el.getAttribute('aria-placeholder') || el.getAttribute('placeholder') ||
        el.title || '';
    }
    n = el.textContent;
    if (n && n.length > 200) n = n.slice(0, 200);
    if (n && n.trim()) return n;
    const sub = el.querySelector('img[alt],[aria-label],svg title,[title]');
    if (sub) {
      n = sub.getAttribute('alt') || sub.getAttribute('aria-label') ||
        (sub.tagName === 'title' ? sub.textContent : sub.getAttribute('title'));
      if (n) return n;
    }
    return el.title || '';
  }

  function roleOf(el, tag) {
    const r = el.getAttribute('role');
    if (r) {
      const first = r.trim().split(/\s+/)[0];
      if (ROLES.has(first)) return first;
    }
    switch (tag) {
      case 'A': case 'AREA': return 'link';
      case 'BUTTON': return 'button';
      case 'SELECT': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'TEXTAREA': return 'textbox';
      case 'SUMMARY': return 'button';
      case 'INPUT': return INPUT_ROLE[el.type] || 'textbox';
      default:
        return el.isContentEditable ? 'textbox' : 'clickable';
    }
  }

  function isSecret(el, tag) {
    return (tag === 'INPUT' || tag === 'TEXTAREA') && isSecretField(el);
  }

  function valueOf(el, tag, role) {
    if (tag === 'INPUT') {
      const t = el.type;
      if (t === 'checkbox' || t === 'radio' || t === 'submit' || t === 'button' || t === 'reset' ||
          t === 'image') return '';
      if (t === 'file') return el.files && el.files.length ? el.files[0].name : '';
      if (!el.value) return '';
      return isSecret(el, tag) ? MASK : el.value;
    }
    if (tag === 'TEXTAREA') return el.value ? (isSecret(el, tag) ? MASK : el.value) : '';
    if (tag === 'SELECT') {
      const out = [];
      for (const o of el.selectedOptions) out.push(squash(o.label || o.textContent));
      return out.join(', ');
    }
    if (role === 'textbox' && el.isContentEditable) return el.textContent || '';
    const v = el.getAttribute('aria-valuetext') || el.getAttribute('aria-valuenow');
    return v || '';
  }

  function deepActive() {
    let a = document.activeElement;
    for (;;) {
      const sr = a && shadowOf(a);
      if (sr && sr.activeElement) a = sr.activeElement;
      else if (a && a.tagName === 'IFRAME') {
        let d = null;
        try { d = a.contentDocument; } catch (_) { d = null; }
        if (d && d.activeElement && d.activeElement !== d.body) a = d.activeElement;
        else return a;
      } else return a;
    }
  }

  function statesOf(el, tag, role, active) {
    const s = [];
    const ac = el.getAttribute('aria-checked');
    if (tag === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) {
      if (el.indeterminate) s.push('mixed');
      else if (el.checked) s.push('checked');
    } else if (ac === 'true') s.push('checked');
    else if (ac === 'mixed') s.push('mixed');
    if (tag === 'SUMMARY') {
      const d = el.parentElement;
      if (d && d.tagName === 'DETAILS') s.push(d.open ? 'expanded' : 'collapsed');
    } else {
      const ex = el.getAttribute('aria-expanded');
      if (ex === 'true') s.push('expanded');
      else if (ex === 'false') s.push('collapsed');
    }
    if (el.getAttribute('aria-selected') === 'true' || el.getAttribute('aria-pressed') === 'true' ||
        el.getAttribute('aria-current') && el.getAttribute('aria-current') !== 'false') {
      s.push('selected');
    }
    if (el.disabled || el.getAttribute('aria-disabled') === 'true') s.push('disabled');
    if (el.readOnly && FIELD_TAGS.has(tag)) s.push('readonly');
    if (el.required || el.getAttribute('aria-required') === 'true') s.push('required');
    // A secret field (password, card number, CVC): what is typed into it is never echoed
    // (protocol.md section 5); the host masks the text of actions on it.
    if (isSecret(el, tag) && el.type !== 'password') s.push('secret');
    if (el === active) s.push('focused');
    return s;
  }

  function shortHref(el, loc) {
    const raw = el.getAttribute('href');
    if (!raw || raw === '#' || /^\s*javascript:/i.test(raw)) return '';
    let u;
    try { u = new URL(el.href); } catch (_) { return clip(raw, 48); }
    let s = u.origin === loc.origin ? u.pathname + u.search + u.hash
      : u.host + (u.pathname === '/' ? '' : u.pathname) + u.search;
    return clip(s, 48);
  }

  // The top-viewport offset of each document we visit (iframe content box offsets add up).
  function frameOffset(doc) {
    let x = 0, y = 0;
    let win = doc.defaultView;
    while (win && win !== window) {
      const fe = win.frameElement;
      if (!fe) break;
      const r = fe.getBoundingClientRect();
      const cs = win.parent.getComputedStyle(fe);
      x += r.left + fe.clientLeft + parseFloat(cs.paddingLeft);
      y += r.top + fe.clientTop + parseFloat(cs.paddingTop);
      win = win.parent;
    }
    return [x, y];
  }

  function sameOriginDoc(iframe) {
    try {
      const d = iframe.contentDocument;
      return d && d.documentElement ? d : null;
    } catch (_) { return null; }
  }

  // The shadow roots the current snapshot walked (a modal <dialog> may live in one).
  let shadowRoots = [];
  // Elements the current snapshot walked that may host a closed shadow root nobody asked about.
  let maybeHosts = [];
  // The cross-origin frames the current snapshot walked.
  let xframes = [];

  // Collect candidate controls in document order (shadow roots and iframes appended at the
  // position of their host, so order stays visual-ish).
  function collect(root, out, pointer) {
    if (root.host) shadowRoots.push(root);
    const found = root.querySelectorAll(NATIVE);
    const isCand = new Set(found);
    const all = root.querySelectorAll('*');
    const covered = new Set();       // inside a candidate or a pointer element: not a new control
    const extra = [];                // [position-in-all, element-or-subroot]
    for (let i = 0; i < all.length; i++) {
      const el = all[i];
      const parent = el.parentElement;
      const inCovered = parent !== null && covered.has(parent);
      if (isCand.has(el)) {
        out.push(el);
        covered.add(el);
      } else if (inCovered) {
        covered.add(el);
      } else if (pointer && POINTERISH.has(el.tagName)) {
        const cs = getComputedStyle(el);
        if (cs.cursor === 'pointer' && !(parent && getComputedStyle(parent).cursor === 'pointer') &&
            !(el.tagName === 'LABEL' && el.control) && !el.querySelector(NATIVE)) {
          out.push(el);
          covered.add(el);
        }
      }
      const sr = shadowOf(el);
      if (sr) collect(sr, out, pointer);
      else if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
        const d = sameOriginDoc(el);
        if (d) collect(d, out, pointer);
        else xframes.push(el);
      } else if (maybeClosedHost(el)) maybeHosts.push(el);
    }
    return out;
  }

  // The element a user would click for `el`: itself, or the visible label of a hidden
  // (custom-styled) checkbox/radio/input.
  // Returns [target, its rect] or null (one getBoundingClientRect per visible element).
  function visualTarget(el) {
    let r = visibleRect(el);
    if (r) return [el, r];
    if (FIELD_TAGS.has(el.tagName)) {
      for (const l of labelsOf(el)) if ((r = visibleRect(l))) return [l, r];
    }
    return null;
  }

  const VIS_OPTS = { checkOpacity: true, checkVisibilityCSS: true, opacityProperty: true,
    visibilityProperty: true };
  function visibleRect(el) {
    if (!el.checkVisibility(VIS_OPTS)) return null;
    const r = el.getBoundingClientRect();
    return r.width > 1 && r.height > 1 ? r : null;
  }

  // What an index stands for: role and the name as listed; role only for controls whose text is
  // their value (fields, comboboxes, popup buttons that show their current choice).
  function valued(el, role) {
    if (VALUED.has(role)) return true;
    const hp = el.getAttribute('aria-haspopup');
    return hp !== null && hp !== 'false';
  }
  function key(el, role, name, quoted) {
    return valued(el, role) ? role : role + ' ' + (quoted || JSON.stringify(name));
  }

  function describe(e, loc, active, isNew) {
    const el = e.el, tag = el.tagName;
    const role = e.role;
    let line = (isNew ? '*[' : '[') + e.idx + '] ' + role;
    const name = clip(squash(nameOf(el, tag, role)), 60);
    const quoted = JSON.stringify(name);
    e.key = key(el, role, name, quoted);
    if (name) line += ' ' + quoted;
    const v = clip(squash(valueOf(el, tag, role)), 40);
    if (v && v !== name) line += ' value=' + JSON.stringify(v);
    const st = statesOf(el, tag, role, active);
    if (st.length) line += ' ' + st.join(' ');
    if (role === 'link') {
      const h = shortHref(el, loc);
      if (h) line += ' -> ' + h;
    }
    return line;
  }

  // Inertness: a modal <dialog> (top layer; everything outside it is inert), a visible
  // aria-modal overlay covering the viewport, or an `inert` ancestor. The modal of each document is
  // looked up once per snapshot (`cache`; 'dialog:modal' uses Chromium's tag fast path, ~0.1 ms at
  // 15k elements) and checked for every entry only when one is open; [inert] ancestors are walked
  // (native closest) only for entries about to be described, after one '[inert]' query per
  // document when that is most of them (scope="all", a filter; ~0.5 ms at 15k elements).
  function modalOf(doc, cache) {
    let m = cache.get(doc);
    if (m !== undefined) return m;
    m = null;
    try { m = doc.querySelector('dialog:modal'); } catch (_) { m = null; }
    // A web component's modal dialog: in the top layer all the same, but out of reach of the
    // document's own query.
    for (let i = 0; !m && i < shadowRoots.length; i++) {
      const sr = shadowRoots[i];
      if (sr.ownerDocument === doc) {
        try { m = sr.querySelector('dialog:modal'); } catch (_) { m = null; }
      }
    }
    if (!m) {
      for (const o of doc.querySelectorAll('[aria-modal=true]')) {
        if (coversViewport(o)) { m = o; break; }
      }
    }
    cache.set(doc, m);
    return m;
  }

  function coversViewport(m) {
    // The overlay itself or its backdrop ancestor: a box spanning the viewport.
    const win = m.ownerDocument.defaultView;
    const vw = win.innerWidth, vh = win.innerHeight;
    if (!m.checkVisibility(VIS_OPTS)) return false;
    for (let n = m, depth = 0; n && n.nodeType === 1 && depth < 4; n = n.parentElement, depth++) {
      const r = n.getBoundingClientRect();
      if (r.left <= 1 && r.top <= 1 && r.right >= vw - 1 && r.bottom >= vh - 1) return true;
    }
    return false;
  }

  // Is `b` inside `a` in the rendered (flat) tree? A slotted element counts as inside the slot
  // it is shown in, e.g. the buttons a page puts into a web component's dialog.
  function deepContains(a, b) {
    for (let n = b; n; n = n.assignedSlot || n.parentNode || n.host) if (n === a) return true;
    return false;
  }

  // The next node up from `n`'s tree: its shadow host, or its frame's <iframe> (same origin).
  function hostOf(n) {
    const root = n.getRootNode();
    if (root.host) return root.host;
    const win = root.defaultView;
    return win && win !== window ? win.frameElement : null;
  }

  function behindModal(el, cache) {
    for (let n = el, depth = 0; n && depth < 8; n = n.ownerDocument.defaultView === window ? null
      : n.ownerDocument.defaultView.frameElement, depth++) {
      const m = modalOf(n.ownerDocument, cache);
      if (m && !deepContains(m, n)) return true;
    }
    return false;
  }

  function inertAncestor(el) {
    for (let n = el, depth = 0; n && depth < 16; n = hostOf(n), depth++) {
      if (n.closest('[inert]')) return true;
    }
    return false;
  }

  function isInert(el, cache) {
    return behindModal(el, cache) || inertAncestor(el);
  }

  function lineFor(el) {
    labelIndex = new WeakMap();
    const tag = el.tagName;
    const e = { el, idx: state.byEl.get(el) || 0, role: roleOf(el, tag) };
    let line = describe(e, location, deepActive(), false);
    if (isInert(el, new Map())) line += ' inert';
    return [line, e.key];
  }

  function snapshot(opts) {
    const t0 = performance.now();
    const scope = opts.scope || 'viewport';
    const filter = (opts.text_filter || '').toLowerCase();
    const offset = Math.max(0, opts.offset | 0);
    const limit = opts.limit == null ? Infinity : Math.max(0, opts.limit | 0);
    const maxChars = opts.max_chars == null ? Infinity : Math.max(200, opts.max_chars | 0);
    labelIndex = new WeakMap();
    // `redo`: the same snapshot taken again once closed shadow roots were adopted: what it finds
    // in them is new only if the snapshot it redoes would have said so.
    const first = opts.redo ? state.lastFirst : state.shots === 0;
    if (!opts.redo) state.shots++;
    state.lastFirst = first;

    shadowRoots = [];
    maybeHosts = [];
    xframes = [];
    // In a frame's world (see the top): numbers of its own, positions in the top viewport.
    const fo = opts.frame || null;
    if (fo && state.next === 1) state.next = fo.slot * 100000 + 1;
    const cands = collect(document, [], opts.pointer !== false);
    // Empty boxes are asked about only when they show something (a root renders; a spacer too).
    state.unasked = maybeHosts.filter((el) => el.localName.includes('-') ||
      (el.checkVisibility() && el.offsetWidth >= 8 && el.offsetHeight >= 8));
    const tCollect = performance.now();
    const vw = fo ? fo.vw : innerWidth, vh = fo ? fo.vh : innerHeight;
    const near = vh * 0.5;
    const offsets = new Map();
    const facts = new Map();
    const entries = [];
    const counts = {};
    // Pass 1: reads only (visibility + rects).
    for (const el of cands) {
      const vt = visualTarget(el);
      if (!vt) continue;
      const r = vt[1];
      const doc = el.ownerDocument;
      let off = offsets.get(doc);
      if (!off) {
        off = doc === document ? [0, 0] : frameOffset(doc);
        if (fo) off = [off[0] + fo.x, off[1] + fo.y];
        offsets.set(doc, off);
      }
      const top = r.top + off[1], bottom = r.bottom + off[1];
      const left = r.left + off[0], right = r.right + off[0];
      if (right < 0 && left + scrollX < 0) continue;     // parked off-page (skip links)
      let pos = bottom < 0 ? (bottom < -near ? -2 : -1) : top > vh ? (top > vh + near ? 2 : 1) : 0;
      if (fo && r.bottom + off[1] - fo.y < 0) pos = Math.min(pos, -1);  // scrolled out of its frame
      if (fo && r.top + off[1] - fo.y > innerHeight) pos = Math.max(pos, 1);
      entries.push({ el, pos, hx: right < 0 || left > vw });
    }
    const tRects = performance.now();
    // Pass 2: identity + description.
    const active = deepActive();
    const loc = location;
    const lines = [];
    let above = 0, below = 0, nNew = 0, aboveF = 0, belowF = 0, inert = 0;
    // Inertness gates (see modalOf): is a modal open in any document with entries; and, when many
    // entries will be described (scope="all", a filter), does any of those documents have an
    // [inert] element at all (one query each, cheaper than thousands of ancestor walks).
    let hasModal = modalOf(document, facts) !== null;
    for (const doc of offsets.keys()) if (modalOf(doc, facts)) hasModal = true;
    let mayInert = true;
    if (scope === 'all' || filter) {
      mayInert = document.querySelector('[inert]') !== null;
      for (const doc of offsets.keys()) if (!mayInert) mayInert = doc.querySelector('[inert]') !== null;
    }
    for (const e of entries) {
      const el = e.el;
      let idx = state.byEl.get(el);
      let isNew = false;
      if (idx === undefined) {
        idx = state.next++;
        state.byEl.set(el, idx);
        state.byIdx.set(idx, new WeakRef(el));
        isNew = !first;
      }
      if (isNew) nNew++;
      e.idx = idx;
      e.role = roleOf(el, el.tagName);
      const kind = KIND[e.role] || (e.role === 'clickable' || e.role === 'tab' ||
        e.role.startsWith('menu') || e.role === 'option' || e.role === 'treeitem' ? 'other' : 'field');
      counts[kind] = (counts[kind] || 0) + 1;
      const inWindow = scope === 'all' || (e.pos > -2 && e.pos < 2);
      const blocked = (hasModal && behindModal(el, facts)) ||
        ((inWindow || filter) && mayInert && inertAncestor(el));
      if (blocked && scope !== 'all') { inert++; continue; }
      if (!inWindow && !filter) {
        if (e.pos < 0) above++; else below++;
        continue;
      }
      let line = describe(e, loc, active, isNew);
      if (e.hx) line += ' offscreen';
      if (blocked) line += ' inert';
      if (filter && !line.toLowerCase().includes(filter)) continue;
      if (!inWindow) { if (e.pos < 0) aboveF++; else belowF++; continue; }
      lines.push({ line, pos: e.pos, idx, key: e.key });
    }

    // Header.
    const se = document.scrollingElement || document.documentElement;
    const sh = Math.max(se.scrollHeight, vh);
    const pagesAbove = scrollY / vh, pagesBelow = Math.max(0, sh - scrollY - vh) / vh;
    const kinds = Object.keys(counts).sort().map((k) => counts[k] + ' ' + k).join(', ');
    const out = [];
    if (!fo) {
      out.push('# page ' + JSON.stringify(clip(squash(document.title), 80)) + ' ' + clip(loc.href, 120));
      out.push('# ready=' + document.readyState + ' scroll=' + Math.round(scrollX) + ',' +
        Math.round(scrollY) + ' viewport=' + vw + 'x' + vh + ' pages above=' + pagesAbove.toFixed(1) +
        ' below=' + pagesBelow.toFixed(1) + ' doc=' + state.token);
      out.push('# controls ' + entries.length + (kinds ? ' (' + kinds + ')' : '') +
        (nNew ? ', ' + nNew + ' new (*)' : '') + '; scope=' + scope +
        (filter ? ' filter=' + JSON.stringify(opts.text_filter) : ''));
    }
    if (inert) {
      out.push('# ' + inert + ' controls are inert, behind an open modal or in an inert region ' +
        '(not listed; scope="all" lists them marked inert): they cannot be used until it closes');
    }
    // Body: paging, then the char budget.
    const total = lines.length;
    const end = Math.min(total, offset + limit);
    let used = out.reduce((a, s) => a + s.length + 1, 0);
    let prevPos = 0, shown = 0, truncated = false;
    for (let i = offset; i < end; i++) {
      const { line, pos, idx, key: k } = lines[i];
      let sep = '';
      if (pos !== prevPos) sep = pos < 0 ? '-- above viewport --' : pos > 0 ? '-- below viewport --' : '-- in viewport --';
      const need = line.length + 1 + (sep ? sep.length + 1 : 0);
      if (used + need > maxChars - 90) { truncated = true; break; }
      if (sep) out.push(sep);
      prevPos = pos;
      out.push(line);
      used += need;
      shown++;
      // What this index now stands for: what the model was just shown.
      state.seen.set(idx, k);
    }
    const next = offset + shown;
    if (truncated) {
      out.push('# [truncated at max_chars: ' + (total - next) + ' more; use offset=' + next +
        ' or a text_filter]');
    } else if (next < total) {
      out.push('# [' + (total - next) + ' more; use offset=' + next + ']');
    }
    if (above || below) {
      out.push('# not listed: ' + above + ' controls further above, ' + below +
        ' further below (scroll, or scope="all")');
    }
    if (aboveF || belowF) {
      out.push('# ' + (aboveF + belowF) + ' more matches outside the viewport (scope="all")');
    }
    return {
      text: out.join('\n'), token: state.token, count: entries.length, listed: total,
      shown, offset, next_offset: next < total ? next : null, truncated,
      above, below, inert, new: nNew, url: loc.href, title: document.title,
      closed_hosts: state.unasked.length, frames: frameList(),
      ready_state: document.readyState, ms: performance.now() - t0,
      phases: { collect: tCollect - t0, rects: tRects - tCollect, describe: performance.now() - tRects },
    };
  }

  // The content box of a cross-origin <iframe> in top-viewport pixels.
  function contentBox(fe) {
    const off = fe.ownerDocument === document ? [0, 0] : frameOffset(fe.ownerDocument);
    const r = fe.getBoundingClientRect();
    const cs = fe.ownerDocument.defaultView.getComputedStyle(fe);
    const x = r.left + fe.clientLeft + parseFloat(cs.paddingLeft) + off[0];
    const y = r.top + fe.clientTop + parseFloat(cs.paddingTop) + off[1];
    return { x, y, w: fe.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight),
      h: fe.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom) };
  }

  // The cross-origin frames of this snapshot that show something: {slot, x, y, w, h, src}.
  function frameList() {
    const list = [];
    for (const fe of xframes) {
      if (!fe.checkVisibility(VIS_OPTS) || fe.clientWidth < 2 || fe.clientHeight < 2) continue;
      let slot = state.frameSlot.get(fe);
      if (slot === undefined) {
        slot = state.frameEls.size + 1;
        state.frameSlot.set(fe, slot);
        state.frameEls.set(slot, new WeakRef(fe));
      }
      list.push({ slot, src: fe.src || '', vw: innerWidth, vh: innerHeight, ...contentBox(fe) });
    }
    return list;
  }

  // A frame inside a cross-origin frame gets its slot here, in the top document's numbering
  // (numbers stay unique in the tab's snapshot): the host asks with the slot of the frame it is
  // in and its slot in that frame's own world. The same pair gets the same slot.
  function nestedSlot(parent, local, token) {
    if (token !== state.token) throw new Error('STALE_REF: this page was replaced since the snapshot');
    for (const [slot, link] of state.nested) if (link[0] === parent && link[1] === local) return slot;
    const slot = state.frameEls.size + 1;
    state.frameEls.set(slot, null);
    state.nested.set(slot, [parent, local]);
    return slot;
  }

  function frameEl(slot, token) {
    if (token !== state.token) throw new Error('STALE_REF: this page was replaced since the snapshot');
    const ref = state.frameEls.get(slot);
    const fe = ref && ref.deref();
    if (!fe || !fe.isConnected) throw new Error('STALE_REF: frame ' + slot + ' was removed from the page');
    return fe;
  }

  // --- index resolution and actions -------------------------------------------------------------

  // The element of index `idx`; STALE_REF when the document changed, the element is gone, or
  // (check) it now shows another role/name than the line the index was last listed with.
  function get(idx, token, check = true) {
    if (token !== state.token) {
      throw new Error('STALE_REF: index ' + idx + ' belongs to another document');
    }
    const ref = state.byIdx.get(idx);
    const el = ref && ref.deref();
    if (!el) throw new Error('STALE_REF: no element [' + idx + '] in this document');
    if (!el.isConnected || !el.ownerDocument.defaultView) {
      throw new Error('STALE_REF: element [' + idx + '] was removed from the page');
    }
    const was = check ? state.seen.get(idx) : undefined;
    if (was !== undefined) {
      const tag = el.tagName, role = roleOf(el, tag);
      let now = role;
      if (!valued(el, role)) {
        labelIndex = new WeakMap();
        now = key(el, role, clip(squash(nameOf(el, tag, role)), 60));
      }
      if (now !== was) {
        throw new Error('STALE_REF: element [' + idx + '] now shows ' + now + ', was ' + was +
          ' when last listed (a list may reuse elements for other rows); call inspect_page and use ' +
          'the numbers it lists');
      }
    }
    return el;
  }

  // --- click verification ---------------------------------------------------------------------

  function tagDesc(n) {
    let d = n.tagName.toLowerCase();
    if (n.id) d += '#' + n.id;
    else if (typeof n.className === 'string' && n.className.trim()) {
      d += '.' + n.className.trim().split(/\s+/)[0];
    }
    return d;
  }

  // What a click hit, for the model: the nearest listed control on its path ('[5] button "Save"'),
  // else the innermost element ('div.backdrop').
  function hitDesc(path) {
    for (const n of path) {
      if (n.nodeType !== 1) continue;
      const i = state.byEl.get(n);
      if (i !== undefined) {
        labelIndex = new WeakMap();
        const role = roleOf(n, n.tagName);
        const name = clip(squash(nameOf(n, n.tagName, role)), 60);
        return '[' + i + '] ' + role + (name ? ' ' + JSON.stringify(name) : '');
      }
    }
    const first = path.find((n) => n.nodeType === 1);
    return first ? tagDesc(first) : 'nothing';
  }

  function disarm() {
    const a = state.armed;
    state.armed = null;
    if (a) a.off();
    return a;
  }

  function arm(el, t) {
    disarm();
    const rec = { hit: null, what: '', pressed: false, el };
    let first = null;  // the click event judged (each listener on its path may see more of it)
    const wins = new Set([window]);
    const w = el.ownerDocument.defaultView;
    if (w) wins.add(w);
    // Inside a shadow root, listen on the root too: a closed one hides its inside from the
    // composed path a window listener sees.
    for (let r = el.getRootNode(); r && r.host; r = r.host.getRootNode()) wins.add(r);
    const on = (e) => {
      if (!e.isTrusted || (first !== null && first !== e) || rec.hit === true) return;
      first = e;
      const path = e.composedPath();
      rec.hit = path.includes(el) || path.includes(t) ||
        (e.target && e.target.tagName === 'LABEL' && e.target.control === el);
      if (!rec.hit) rec.what = hitDesc(path);
    };
    // The press and the release: seen without a click, the page changed under the pointer
    // between them (the element was replaced or moved), and no click happened at all.
    const pressed = (e) => { if (e.isTrusted) rec.pressed = true; };
    const kinds = [['click', on], ['mousedown', pressed], ['mouseup', pressed]];
    for (const win of wins) for (const [k, fn] of kinds) win.addEventListener(k, fn, true);
    const off = () => { for (const win of wins) for (const [k, fn] of kinds) win.removeEventListener(k, fn, true); };
    state.armed = { rec, off };
  }

  // The armed check's result ({hit: true|false|null, what}), disarming it; null if none was armed.
  function clicked() {
    const a = disarm();
    if (!a) return null;
    const { hit, what, pressed, el } = a.rec;
    // Only while the element is still there to click: a page that acts on the press itself
    // (a menu that closes, an option that goes) leaves no verdict, as before.
    if (hit === null && pressed && el.isConnected && el.getClientRects().length > 0) {
      const why = 'the page changed under the pointer between the press and the release, so no click happened';
      return { hit: false, what: '', why };
    }
    return { hit, what };
  }

  function hitOk(el, target, x, y) {
    // Descend through shadow roots and same-origin iframes like a real hit test would.
    let doc = document, px = x, py = y, hit = null;
    for (let depth = 0; depth < 8; depth++) {
      hit = doc.elementFromPoint(px, py);
      while (hit && shadowOf(hit)) {
        const inner = shadowOf(hit).elementFromPoint(px, py);
        if (!inner || inner === hit) break;
        hit = inner;
      }
      if (hit && (hit.tagName === 'IFRAME' || hit.tagName === 'FRAME')) {
        const d = sameOriginDoc(hit);
        if (!d) break;
        const [ox, oy] = frameOffset(d);
        doc = d; px = x - ox; py = y - oy;
        continue;
      }
      break;
    }
    if (!hit) return [false, 'nothing'];
    const contains = (a, b) => {
      for (let n = b; n; n = n.parentNode || n.host) if (n === a) return true;
      return false;
    };
    if (contains(target, hit) || contains(el, hit) || contains(hit, el)) return [true, null];
    if (hit.tagName === 'LABEL' && hit.control === el) return [true, null];
    return [false, tagDesc(hit)];
  }

  function inView(r, vw, vh) {
    return r.top >= 0 && r.left >= 0 && r.bottom <= vh && r.right <= vw;
  }

  function box(t) {
    // The first non-empty client rect: the centre of a wrapped inline link's bounding box can
    // fall between its lines.
    const off = t.ownerDocument === document ? [0, 0] : frameOffset(t.ownerDocument);
    let r = t.getBoundingClientRect();
    if (t.getClientRects) {
      for (const cr of t.getClientRects()) if (cr.width > 1 && cr.height > 1) { r = cr; break; }
    }
    return { left: r.left + off[0], top: r.top + off[1], right: r.right + off[0],
      bottom: r.bottom + off[1], width: r.width, height: r.height };
  }

  // Two animation frames, capped (rAF stalls in background tabs).
  function frames(maxMs) {
    return new Promise((res) => {
      const t = setTimeout(res, maxMs);
      requestAnimationFrame(() => requestAnimationFrame(() => { clearTimeout(t); res(); }));
    });
  }

  // The click point of `idx`, scrolling it into view first if needed. armClick: arm the click
  // check that clicked() reads back after the mouse events.
  function resolve(idx, token, armClick = false, mayScroll = true) {
    const el = get(idx, token);
    labelIndex = new WeakMap();
    const vt = visualTarget(el);
    const t = vt && vt[0];
    if (!t) {
      return { ok: false, reason: 'element [' + idx + '] is not visible', line: lineFor(el)[0] };
    }
    const r = box(t);
    if (mayScroll && !inView(r, innerWidth, innerHeight)) {
      t.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
      // The page's scroll handlers run on the next frame (a virtualised list re-renders, a sticky
      // header appears): let them, then look again (the element may now be gone or show another
      // row: STALE_REF rather than a click on whatever took its place).
      return frames(120).then(() => resolve(idx, token, armClick, false));
    }
    if (armClick) arm(el, t);
    const pts = [[0.5, 0.5], [0.25, 0.5], [0.75, 0.5], [0.5, 0.25], [0.5, 0.75]];
    let cover = null;
    for (const [fx, fy] of pts) {
      const x = r.left + r.width * fx, y = r.top + r.height * fy;
      const [ok, by] = hitOk(el, t, x, y);
      if (ok) return { ok: true, x, y, covered_by: null };
      if (cover === null) cover = by;
    }
    return { ok: true, x: r.left + r.width / 2, y: r.top + r.height / 2, covered_by: cover };
  }

  // after=true: the element's state after an action on it. No identity check (the action may
  // have renamed it, "Follow" -> "Following"), and the line shown re-baselines the index.
  function info(idx, token, after = false) {
    const el = get(idx, token, !after);
    const tag = el.tagName;
    const [line, k] = lineFor(el);
    if (after) state.seen.set(idx, k);
    return {
      tag, type: tag === 'INPUT' ? el.type : '', role: roleOf(el, tag),
      checked: tag === 'INPUT' ? el.checked : el.getAttribute('aria-checked') === 'true',
      editable: FIELD_TAGS.has(tag) && tag !== 'SELECT' || el.isContentEditable,
      focused: deepActive() === el, line,
      url: location.href, title: document.title, nav: state.nav.count,
    };
  }

  function focus(idx, token) {
    const el = get(idx, token);
    el.focus({ preventScroll: false });
    return deepActive() === el;
  }

  function selectOption(idx, token, want) {
    const el = get(idx, token);
    if (el.tagName !== 'SELECT') throw new Error('NOT_SELECT: element [' + idx + '] is not a <select>');
    const opts = Array.from(el.options);
    const w = String(want), wl = w.trim().toLowerCase();
    const label = (o) => squash(o.label || o.textContent);
    const o = opts.find((o) => o.value === w) || opts.find((o) => label(o) === w.trim()) ||
      opts.find((o) => label(o).toLowerCase() === wl) ||
      opts.find((o) => label(o).toLowerCase().includes(wl));
    if (!o) {
      return { ok: false, options: opts.slice(0, 30).map(label) };
    }
    if (o.disabled) return { ok: false, options: [], reason: 'option is disabled' };
    // Like a user's choice: set, then `input` and `change` (both bubble; the page sees them).
    el.value = o.value;
    o.selected = true;
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    if (el.value !== o.value) {  // read back: the page's own handler may refuse the choice
      const now = el.selectedOptions[0];
      return { ok: false, options: [], reason: 'the page put it back to ' +
        JSON.stringify(now ? label(now) : '') + ' (it did not accept ' + JSON.stringify(label(o)) + ')' };
    }
    return { ok: true, value: o.value, label: label(o) };
  }

  async function settle(maxMs) {
    // Let handlers run and a frame render; capped because rAF stalls in background tabs.
    await frames(maxMs);
    return { nav: state.nav.count, nav_url: state.nav.url, same_document: state.nav.sameDocument,
      url: location.href, title: document.title };
  }

  const api = {
    token: state.token, snapshot, resolve, info, focus, selectOption, settle, clicked,
    lineFor: (el) => lineFor(el)[0], navCount: () => state.nav.count,
    // The element of an index, for the other scripts of this world (list_find.js): no identity
    // check, STALE_REF only when it is gone.
    element: (idx, token) => get(idx, token, false),
    // Cross-origin frames (see the top).
    frameEl, frameBox: (slot, token) => contentBox(frameEl(slot, token)), nestedSlot,
    frameParent: (slot, token) => {
      if (token !== state.token) throw new Error('STALE_REF: this page was replaced since the snapshot');
      return state.nested.get(slot) || null;
    },
    // Closed shadow roots (see the top): the hosts to ask about (marked asked), then each root.
    takeUnasked: () => {
      const hosts = state.unasked;
      state.unasked = [];
      for (const h of hosts) state.asked.add(h);
      return hosts;
    },
    adoptRoot: (root) => {
      if (root && root.host && !root.host.shadowRoot) state.closedRoots.set(root.host, root);
      return !!root;
    },
  };
  Object.freeze(api);
  Object.defineProperty(globalThis, '__browy', { value: api, writable: false, enumerable: false });
  return state.token;
})()
