// Browy list finder: scrolls a long or virtualised list until a text appears.
//
// Evaluated after snapshot.js in the same isolated world (it reaches elements by index through
// `__browy.element`). A virtualised list keeps only the rows near the viewport in the DOM, so a
// row that is not rendered cannot be listed or filtered for: it has to be scrolled into being.
// `__browyFind.step(o)` scrolls the list one viewport (80%) at a time, lets the page render after
// each scroll, and looks for the text among what is rendered — for at most `o.budget_ms`, so the
// host can report progress and keep its deadlines between calls. Nothing of the list is returned
// but where the search stands and, once found, the match.
//
// Waiting for the page: a scroll event is dispatched on the next frame and lists render on it;
// one animation frame (capped: rAF does not run in a background tab, where we dispatch the scroll
// event ourselves so that the list renders all the same), then, while the first scrolls show that
// the list renders on scroll, up to `settle_ms` more for a debounced render to land.
(() => {
  'use strict';
  if (globalThis.__browyFind) return;

  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim().toLowerCase();

  function scrollable(el) {
    if (el.scrollHeight <= el.clientHeight + 1) return false;
    return /(auto|scroll|overlay)/.test(getComputedStyle(el).overflowY);
  }

  // The scrolling box of `el` (itself, or its nearest scrollable ancestor), else the page.
  function scrollerOf(el) {
    for (let n = el; n && n !== document.body && n !== document.documentElement; n = n.parentElement) {
      if (scrollable(n)) return n;
    }
    return document.scrollingElement || document.documentElement;
  }

  // The page when it scrolls, else the largest scrollable box on screen.
  function mainScroller() {
    const page = document.scrollingElement || document.documentElement;
    if (page.scrollHeight > innerHeight + 1) return page;
    let best = page, area = 0;
    for (const el of document.body.querySelectorAll('*')) {
      if (el.clientHeight < 40 || !scrollable(el)) continue;
      const r = el.getBoundingClientRect();
      const a = Math.max(0, Math.min(r.bottom, innerHeight) - Math.max(r.top, 0)) *
        Math.max(0, Math.min(r.right, innerWidth) - Math.max(r.left, 0));
      if (a > area) { area = a; best = el; }
    }
    return best;
  }

  // Whole words: "order #12" is found in "Order #12 (paid)", not in "Order #120".
  function wordsRe(needle) {
    const esc = needle.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const w = /[\p{L}\p{N}_]/u;
    return new RegExp((w.test(needle[0]) ? '(?<![\\p{L}\\p{N}_])' : '') + esc +
      (w.test(needle[needle.length - 1]) ? '(?![\\p{L}\\p{N}_])' : ''), 'u');
  }

  // The innermost visible element under `root` whose text holds `needle` (lower case) as words.
  function match(root, needle, re) {
    const top = isPage(root) ? document.body : root;
    if (!norm(top.textContent).includes(needle)) return null;
    const stack = [top];
    while (stack.length) {
      const el = stack.pop();
      let inner = false;
      for (let c = el.lastElementChild; c; c = c.previousElementSibling) {
        if (norm(c.textContent).includes(needle)) { stack.push(c); inner = true; }
      }
      if (!inner && re.test(norm(el.textContent)) && el.checkVisibility() &&
          el.getClientRects().length) return el;
    }
    return null;
  }

  const isPage = (root) => root === document.scrollingElement || root === document.documentElement;

  function where(root) {
    const page = isPage(root);
    return { top: Math.round(root.scrollTop), height: Math.round(root.scrollHeight),
      view: Math.round(page ? innerHeight : root.clientHeight) };
  }

  // One frame, or `ms` when frames do not run (a background tab).
  function frame(ms) {
    return new Promise((res) => {
      const t = setTimeout(() => res(false), ms);
      requestAnimationFrame(() => { clearTimeout(t); res(true); });
    });
  }

  // Watches `root` from now on for a render: `until(ms)` resolves true at the first change seen
  // since the watch began, or false `ms` after it is called. Called once the scroll's frame has
  // run, so a page's debounce timer (set in that frame's scroll handler) is always due before
  // ours, however late a loaded machine runs the frame.
  function watch(root) {
    let seen = false, wake = null;
    const obs = new MutationObserver(() => { seen = true; if (wake) wake(); });
    obs.observe(isPage(root) ? document.body : root,
      { childList: true, subtree: true, characterData: true });
    return {
      until: (ms) => new Promise((res) => {
        const done = () => { obs.disconnect(); clearTimeout(t); res(seen); };
        const t = setTimeout(done, ms);
        if (seen) done(); else wake = done;
      }),
    };
  }

  // o: {id, text, start, wrapped, probes, renders, budget_ms, settle_ms}; `probes` and
  // `renders` carry over between calls: scrolls made, and how many of them changed the DOM.
  async function step(o) {
    const root = searches.get(o.id);
    if (!root || !root.isConnected) throw new Error('STALE_REF: the list went away');
    const needle = norm(o.text), re = wordsRe(needle);
    const t0 = performance.now();
    let steps = 0, probes = o.probes, renders = o.renders;
    const out = (extra) => ({ steps, probes, renders, wrapped: o.wrapped, ...where(root), ...extra });
    for (;;) {
      const m = match(root, needle, re);
      if (m) {
        m.scrollIntoView({ block: 'center', inline: 'nearest', behavior: 'instant' });
        await frame(50);
        const text = (m.innerText || m.textContent || '').replace(/\s+/g, ' ').trim();
        return out({ found: true, text: text.slice(0, 160) });
      }
      if (performance.now() - t0 > o.budget_ms) return out({ found: false, done: false });
      const before = root.scrollTop;
      if (o.wrapped && before >= o.start) return out({ found: false, done: true });
      // A list that did not render on its first scrolls renders nothing on scroll: settle less.
      const changed = watch(root);
      root.scrollTop = before + Math.max(40, where(root).view * 0.8);
      if (!(await frame(60))) {  // no frame ran (a background tab): the page's scroll event
        if (isPage(root)) document.dispatchEvent(new Event('scroll', { bubbles: true }));
        else root.dispatchEvent(new Event('scroll'));
      }
      // rendered in that frame's scroll handler, or debounced after it
      if (await changed.until(probes >= 6 && renders === 0 ? o.settle_ms / 3 : o.settle_ms)) renders++;
      steps++;
      probes++;
      if (root.scrollTop <= before + 0.5) {  // the end of the list
        if (o.wrapped || o.start <= 0) return out({ found: false, done: true });
        const back = watch(root);
        root.scrollTop = 0;  // search the part above where we started, then stop there
        o.wrapped = true;
        await frame(60);
        await back.until(o.settle_ms);  // a debounced list renders the top rows first
      }
    }
  }

  // The scroller of each search, found once: the element named by index may be a row the list
  // removes on its next render.
  const searches = new Map();
  let nextSearch = 1;
  function start(index, token) {
    const root = index ? scrollerOf(__browy.element(index, token)) : mainScroller();
    const id = nextSearch++;
    searches.set(id, root);
    searches.delete(id - 8);  // a few searches back at most
    return { id, top: where(root).top };
  }

  Object.defineProperty(globalThis, '__browyFind', {
    value: Object.freeze({ step, start }), writable: false, enumerable: false,
  });
})()
