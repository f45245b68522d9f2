"""Tools that read the page: ``query_dom``, ``find_visible_text``, ``get_page_info``,
``extract_text``, ``get_page_html`` and ``evaluate_js``, with their argument models.

Page text is data, not instructions: what they read is wrapped in ``<untrusted_page_content>``
(architecture.md section 5). ``evaluate_js`` runs the model's script, so it counts as
page-changing.
"""

from __future__ import annotations

import json
import re

from pydantic import Field

from actors.tools.registry import Registry
from actors.tools.shared import (
    HTML_LIMIT,
    JS_RESULT_LIMIT,
    TEXT_LIMIT,
    NoArgs,
    cut,
    evaluate,
    untrusted,
)
from actors.tools.tool_def import ToolArgs, ToolContext, ToolError, ToolOutput

__all__ = [
    "EvaluateArgs",
    "ExtractTextArgs",
    "FindTextArgs",
    "PageHtmlArgs",
    "QueryDomArgs",
    "register_reading_tools",
]


# --- in-page snippets -----------------------------------------------------------------------------

_JS_DESCRIBE = r"""
(sel, limit) => {
  const out = [];
  const nodes = Array.from(document.querySelectorAll(sel));
  for (const el of nodes.slice(0, limit)) {
    const r = el.getBoundingClientRect();
    const attrs = {};
    for (const a of ["id", "class", "name", "type", "href", "src", "role", "aria-label",
                     "placeholder", "title", "alt"]) {
      const v = el.getAttribute(a);
      if (v) attrs[a] = v.slice(0, 200);
    }
    if ("value" in el && el.value !== undefined && el.value !== "")
      attrs.value = el.type === "password" ? "••••" : String(el.value).slice(0, 200);
    out.push({tag: el.tagName.toLowerCase(), attrs,
              text: (el.innerText || el.textContent || "").trim().replace(/\s+/g, " ")
                .slice(0, 200),
              visible: r.width > 0 && r.height > 0});
  }
  return {total: nodes.length, items: out};
}
"""

_JS_FIND_TEXT = r"""
(needle, limit) => {
  const lower = needle.toLowerCase();
  const path = (el) => {
    const parts = [];
    while (el && el.nodeType === 1 && parts.length < 5) {
      if (el.id) { parts.unshift("#" + CSS.escape(el.id)); break; }
      let p = el.tagName.toLowerCase();
      const sibs = el.parentElement ? Array.from(el.parentElement.children)
        .filter((s) => s.tagName === el.tagName) : [];
      if (sibs.length > 1) p += `:nth-of-type(${sibs.indexOf(el) + 1})`;
      parts.unshift(p);
      el = el.parentElement;
    }
    return parts.join(" > ");
  };
  const walker = document.createTreeWalker(document.body || document.documentElement, 4);
  const out = [];
  const seen = new Set();
  while (walker.nextNode() && out.length < limit) {
    const t = walker.currentNode;
    if (!t.nodeValue || !t.nodeValue.toLowerCase().includes(lower)) continue;
    const el = t.parentElement;
    if (!el || seen.has(el)) continue;
    const r = el.getBoundingClientRect();
    const st = getComputedStyle(el);
    if (r.width === 0 || r.height === 0 || st.visibility === "hidden") continue;
    seen.add(el);
    out.push({selector: path(el), tag: el.tagName.toLowerCase(),
              text: (el.innerText || "").trim().replace(/\s+/g, " ").slice(0, 200),
              inViewport: r.bottom > 0 && r.top < innerHeight});
  }
  return out;
}
"""


# --- argument models ------------------------------------------------------------------------------


class QueryDomArgs(ToolArgs):
    selector: str = Field(description="CSS selector")
    limit: int = Field(default=20, ge=1, le=200)


class FindTextArgs(ToolArgs):
    text: str = Field(min_length=1)
    limit: int = Field(default=20, ge=1, le=100)


class ExtractTextArgs(ToolArgs):
    selector: str | None = Field(default=None, description="limit to this element")
    max_chars: int = Field(default=TEXT_LIMIT, ge=100, le=200_000)


class PageHtmlArgs(ToolArgs):
    selector: str | None = None
    max_chars: int = Field(default=HTML_LIMIT, ge=100, le=500_000)


class EvaluateArgs(ToolArgs):
    code: str = Field(description="JavaScript: an expression, or statements with `return`")
    timeout: float = Field(default=10.0, gt=0, le=60)


def register_reading_tools(reg: Registry) -> None:
    """Add the page-reading tools to ``reg``."""

    # --- selector queries -------------------------------------------------------------------

    @reg.register(
        "query_dom",
        "List elements matching a CSS selector (tag, attributes, text).",
        QueryDomArgs,
        page_changing=False,
    )
    async def query_dom(args: QueryDomArgs, ctx: ToolContext) -> ToolOutput:
        res = await evaluate(
            ctx.page(),
            f"({_JS_DESCRIBE})({json.dumps(args.selector)}, {args.limit})",
            timeout=ctx.timeout,
        )
        lines = [f"{res['total']} elements match {args.selector}"]
        for i, it in enumerate(res["items"]):
            vis = "" if it["visible"] else " (hidden)"
            lines.append(
                f"{i}. <{it['tag']}> {json.dumps(it['attrs'])} {json.dumps(it['text'])}{vis}"
            )
        return ToolOutput(
            content=untrusted(cut("\n".join(lines), TEXT_LIMIT)),
            summary=f"{res['total']} matches",
        )

    @reg.register(
        "find_visible_text",
        "Find visible elements containing a text; gives CSS selectors for them.",
        FindTextArgs,
        page_changing=False,
    )
    async def find_visible_text(args: FindTextArgs, ctx: ToolContext) -> ToolOutput:
        res = await evaluate(
            ctx.page(),
            f"({_JS_FIND_TEXT})({json.dumps(args.text)}, {args.limit})",
            timeout=ctx.timeout,
        )
        lines = [
            f"{r['selector']}  <{r['tag']}> {json.dumps(r['text'])}"
            + ("" if r["inViewport"] else " (off screen)")
            for r in res
        ]
        return ToolOutput(
            content=untrusted("\n".join(lines) or "(not found)"), summary=f"{len(res)} matches"
        )

    # --- reading ----------------------------------------------------------------------------

    @reg.register(
        "get_page_info",
        "URL, title, load state, viewport and scroll position of the current tab.",
        NoArgs,
        page_changing=False,
    )
    async def get_page_info(args: NoArgs, ctx: ToolContext) -> ToolOutput:
        info = await evaluate(
            ctx.page(),
            """({url: location.href, title: document.title,
          readyState: document.readyState, viewport: [innerWidth, innerHeight],
          scroll: [scrollX, scrollY], document: [document.documentElement.scrollWidth,
          document.documentElement.scrollHeight]})""",
            timeout=ctx.timeout,
        )
        info["tabId"] = getattr(ctx.cdp, "tab_id", None)
        return ToolOutput(
            content=json.dumps(info), summary=str(info.get("url", ""))[:200], data=info
        )

    @reg.register(
        "extract_text",
        "The visible text of the page (or of one element), size-bounded.",
        ExtractTextArgs,
        page_changing=False,
    )
    async def extract_text(args: ExtractTextArgs, ctx: ToolContext) -> ToolOutput:
        sel = json.dumps(args.selector) if args.selector else "null"
        text = await evaluate(
            ctx.page(),
            f"""(() => {{ const s = {sel};
          const el = s ? document.querySelector(s) : document.body;
          return el ? el.innerText : null; }})()""",
            timeout=ctx.timeout,
        )
        if text is None:
            raise ToolError(
                f"no element matches {args.selector!r}" if args.selector else "the page has no body"
            )
        return ToolOutput(
            content=untrusted(cut(str(text), args.max_chars)), summary=f"{len(text)} characters"
        )

    @reg.register(
        "get_page_html",
        "The HTML of the page (or of one element), size-bounded.",
        PageHtmlArgs,
        page_changing=False,
    )
    async def get_page_html(args: PageHtmlArgs, ctx: ToolContext) -> ToolOutput:
        sel = json.dumps(args.selector) if args.selector else "null"
        html = await evaluate(
            ctx.page(),
            f"""(() => {{ const s = {sel};
          const el = s ? document.querySelector(s) : document.documentElement;
          return el ? el.outerHTML : null; }})()""",
            timeout=ctx.timeout,
        )
        if html is None:
            raise ToolError(f"no element matches {args.selector!r}")
        return ToolOutput(
            content=untrusted(cut(str(html), args.max_chars)),
            summary=f"{len(html)} characters of HTML",
        )

    @reg.register(
        "evaluate_js",
        "Run JavaScript in the page and return its value: the value "
        "of an expression, or what a `return` statement returns (await allowed).",
        EvaluateArgs,
        page_changing=True,
    )
    async def evaluate_js(args: EvaluateArgs, ctx: ToolContext) -> ToolOutput:
        code = args.code.strip()
        wrapped = re.search(r"\breturn\b", code) is not None
        expr = f"(async () => {{\n{code}\n}})()" if wrapped else code
        res = await ctx.page().send(
            "Runtime.evaluate",
            {
                "expression": expr,
                "returnByValue": True,
                "awaitPromise": True,
                "userGesture": True,
                "timeout": int(args.timeout * 1000),
            },
            page_changing=True,
            timeout=args.timeout + ctx.timeout,
        )
        details = res.get("exceptionDetails")
        if details:
            exc = details.get("exception") or {}
            text = str(exc.get("description") or details.get("text") or "error")
            raise ToolError(f"the script threw: {text[:2000]}")
        result = res.get("result", {})
        if "value" in result:
            out = json.dumps(result["value"], ensure_ascii=False, default=str)
        elif result.get("type") == "undefined":
            out = "undefined"
        else:
            out = str(result.get("description") or result.get("type", ""))
        return ToolOutput(content=cut(out, JS_RESULT_LIMIT), summary=cut(out, 120))
