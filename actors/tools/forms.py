"""Form tools: ``extract_form``, ``fill_form``, ``submit_form`` (protocol.md section 3b names).

A form is picked by a CSS selector (the form itself, or any element inside it); without one, the
first form of the page. A field is named by its ``name``, ``id``, label text, ``aria-label`` or
placeholder — whatever the model read in ``extract_form`` — matched in that order, exactly first,
then case-insensitively, then by substring of the label.

Filling acts like a user where the browser allows it: text fields are focused and typed into with
``Input.insertText``; checkboxes and radio buttons get real mouse clicks at their centre (a script
click is the fallback when something covers them); ``<select>`` and the date/colour/range inputs,
which have no text caret, are set like ``select_option`` does (value, then ``input`` and ``change``
events). File inputs are refused: ``upload_index`` sets files from the sandbox.

Secrets (protocol.md section 5): values of password, card-number and CVC fields are masked in what
these tools return; they are typed into the page but never echoed back.

``fill_form`` and ``submit_form`` change the page: the registry never retries them.
"""

from __future__ import annotations

import asyncio
import json
import time
from importlib import resources
from typing import Any

from pydantic import Field

from actors.tools.keys import key_events
from actors.tools.registry import Registry
from actors.tools.secret_rule import with_rule
from actors.tools.shared import cut, evaluate, loader_id, untrusted, wait_loaded
from actors.tools.tool_def import TabSession, ToolArgs, ToolContext, ToolError, ToolOutput

__all__ = [
    "ExtractFormArgs",
    "FillFormArgs",
    "SubmitFormArgs",
    "forms_call",
    "register_form_tools",
]

_TEXT_LIMIT = 20_000

_FORMS_JS = with_rule(resources.files("actors.tools").joinpath("forms.js").read_text("utf-8"))


def forms_call(fn: str, *args: Any) -> str:
    """An expression calling ``FORMS.<fn>`` of ``forms.js`` on JSON ``args``."""
    call = f"FORMS.{fn}({', '.join(json.dumps(a) for a in args)})"
    return f"(() => {{ {_FORMS_JS}\n return {call}; }})()"


async def _click(cdp: TabSession, x: float, y: float, timeout: float) -> None:
    for kind, buttons in (("mouseMoved", 0), ("mousePressed", 1), ("mouseReleased", 0)):
        params: dict[str, Any] = {"type": kind, "x": x, "y": y, "buttons": buttons}
        if kind != "mouseMoved":
            params |= {"button": "left", "clickCount": 1}
        await cdp.send("Input.dispatchMouseEvent", params, page_changing=True, timeout=timeout)


def _form_error(exc: ToolError) -> ToolError:
    text = exc.message
    if "NO_FORM:" in text:
        return ToolError(text[text.index("NO_FORM:") + 9 :].splitlines()[0])
    return exc


class ExtractFormArgs(ToolArgs):
    form: str | None = Field(
        default=None, description="CSS selector of the form (or of an element in it); default: all"
    )
    limit: int = Field(default=100, ge=1, le=500, description="at most this many fields per form")


class FillFormArgs(ToolArgs):
    fields: dict[str, str | bool | list[str]] = Field(
        description="field name, id or label -> value (text; true/false for checkboxes; an "
        "option's value or label for selects and radio groups)",
        min_length=1,
    )
    form: str | None = Field(default=None, description="CSS selector of the form; default: first")


class SubmitFormArgs(ToolArgs):
    form: str | None = Field(default=None, description="CSS selector of the form; default: first")
    button: str | None = Field(default=None, description="text of the submit button to use")
    timeout: float = Field(default=15.0, gt=0, le=60, description="seconds to wait for a load")


def _field_line(f: dict[str, Any]) -> str:
    key = f["name"] or f["id"] or f["label"] or "(unnamed)"
    parts = [f"- {key} ({f['type']})"]
    if f["label"] and f["label"] != key:
        parts.append(f"label {json.dumps(f['label'])}")
    parts.append(f"value {json.dumps(f['value'], ensure_ascii=False)}")
    if f["required"]:
        parts.append("required")
    if f["disabled"]:
        parts.append("disabled")
    if f.get("options"):
        opts = [
            o["label"] if o["label"] == o["value"] else f"{o['label']}={o['value']}"
            for o in f["options"]
        ]
        parts.append("options " + json.dumps(opts, ensure_ascii=False))
    return " ".join(parts)


async def _fill_one(
    ctx: ToolContext, form: str | None, key: str, value: str | bool | list[str]
) -> tuple[bool, str]:
    cdp = ctx.page()
    prep = await evaluate(
        cdp, forms_call("prepare", form, key, value), page_changing=True, timeout=ctx.timeout
    )
    if prep.get("error"):
        extra = prep.get("fields") or prep.get("options")
        return False, prep["error"] + (f"; choices: {json.dumps(extra)}" if extra else "")
    if prep.get("done"):
        return True, str(prep["done"])
    if prep.get("key") in {"checkbox", "radio"}:
        label = str(prep["label"])
        if prep["click"] is not None:
            await _click(cdp, prep["click"]["x"], prep["click"]["y"], ctx.timeout)
        check = await evaluate(
            cdp, forms_call("finish", form, key, value, label), timeout=ctx.timeout
        )
        if check.get("ok"):
            return True, label
        # Covered or custom-styled: a script click still toggles it the way the page expects.
        await evaluate(
            cdp,
            forms_call("scriptClick", form, key, label),
            page_changing=True,
            timeout=ctx.timeout,
        )
        check = await evaluate(
            cdp, forms_call("finish", form, key, value, label), timeout=ctx.timeout
        )
        return bool(check.get("ok")), f"{label} (script click)"
    text = str(value)
    if text:
        await cdp.send("Input.insertText", {"text": text}, page_changing=True, timeout=ctx.timeout)
    else:
        for ev in key_events("Backspace"):
            await cdp.send("Input.dispatchKeyEvent", ev, page_changing=True, timeout=ctx.timeout)
    check = await evaluate(
        cdp, forms_call("finish", form, key, text, ""), page_changing=True, timeout=ctx.timeout
    )
    # Secrets are typed, never echoed (protocol.md section 5).
    shown = "(hidden)" if prep.get("secret") else f"{len(text)} characters"
    if not check.get("ok"):
        return False, f"typed {shown} but the field holds {check.get('length', '?')} characters"
    return True, f"typed {shown}"


async def _await_navigation(
    ctx: ToolContext, loader_before: str | None, url_before: str, timeout: float
) -> tuple[str, str, bool]:
    """Wait (bounded) for a navigation the submit started: ``(url, title, navigated)``."""
    cdp = ctx.page()
    # A submit handler may start the navigation a little later (validation, a fetch first).
    deadline = time.monotonic() + min(timeout, 2.0)
    changed = False
    while not changed and time.monotonic() < deadline:
        changed = await loader_id(cdp) != loader_before
        if not changed:
            await asyncio.sleep(0.1)
    if changed:
        href, title, _, _ = await wait_loaded(
            cdp, deadline=time.monotonic() + timeout, old_loader=loader_before
        )
        return href, title, True
    href, title, _, _ = await wait_loaded(cdp, deadline=time.monotonic())
    return href, title, href != url_before


def register_form_tools(reg: Registry) -> None:
    """Add ``extract_form``, ``fill_form`` and ``submit_form`` to ``reg``."""

    @reg.register(
        "extract_form",
        "List a form's fields: name, label, type, current value (secrets masked), whether "
        "required, and the options of selects and radio groups; also its submit buttons.",
        ExtractFormArgs,
        page_changing=False,
    )
    async def extract_form(args: ExtractFormArgs, ctx: ToolContext) -> ToolOutput:
        try:
            forms = await evaluate(
                ctx.page(), forms_call("extract", args.form, args.limit), timeout=ctx.timeout
            )
        except ToolError as exc:
            raise _form_error(exc) from None
        lines: list[str] = []
        for f in forms:
            name = f["id"] or f["name"] or f"#{f['index']}"
            target = f" {f['method'].upper()} {f['action']}" if f["action"] else ""
            lines.append(f"form {name}{target}: {len(f['fields'])} fields")
            lines.extend(_field_line(field) for field in f["fields"])
            if f["buttons"]:
                lines.append("buttons: " + json.dumps([b["text"] for b in f["buttons"]]))
        count = sum(len(f["fields"]) for f in forms)
        return ToolOutput(
            content=untrusted(cut("\n".join(lines) or "(no form fields)", _TEXT_LIMIT)),
            summary=f"{len(forms)} forms, {count} fields",
            data={"forms": forms},
        )

    @reg.register(
        "fill_form",
        "Fill several fields of a form at once (field name/id/label -> value), typing like a "
        "user; reports each field's result. Does not submit.",
        FillFormArgs,
        page_changing=True,
    )
    async def fill_form(args: FillFormArgs, ctx: ToolContext) -> ToolOutput:
        results: dict[str, dict[str, Any]] = {}
        lines: list[str] = []
        for key, value in args.fields.items():
            try:
                ok, note = await _fill_one(ctx, args.form, key, value)
            except ToolError as exc:
                if not results:
                    raise _form_error(exc) from None
                ok, note = False, _form_error(exc).message
            results[key] = {"ok": ok, "result": note}
            lines.append(f"{key}: {'ok' if ok else 'FAILED'}, {note}")
        good = sum(r["ok"] for r in results.values())
        head = f"filled {good} of {len(results)} fields"
        if good == 0:
            raise ToolError(head + "\n" + "\n".join(lines))
        return ToolOutput(
            content=head + "\n" + "\n".join(lines), summary=head, data={"fields": results}
        )

    @reg.register(
        "submit_form",
        "Submit a form by clicking its submit button (or requestSubmit() when it has none); "
        "reports the navigation that follows, or the fields the browser found invalid.",
        SubmitFormArgs,
        page_changing=True,
    )
    async def submit_form(args: SubmitFormArgs, ctx: ToolContext) -> ToolOutput:
        cdp = ctx.page()
        try:
            target = await evaluate(
                cdp, forms_call("submitTarget", args.form, args.button), timeout=ctx.timeout
            )
        except ToolError as exc:
            raise _form_error(exc) from None
        if target.get("error"):
            raise ToolError(f"{target['error']}; buttons: {json.dumps(target['buttons'])}")
        loader = await loader_id(cdp)
        url_before = str(await evaluate(cdp, "location.href", timeout=ctx.timeout))
        if target["click"] is not None:
            await _click(cdp, target["click"]["x"], target["click"]["y"], ctx.timeout)
            how = f"clicked {json.dumps(target['button'])}"
        else:
            await evaluate(
                cdp, forms_call("requestSubmit", args.form), page_changing=True, timeout=ctx.timeout
            )
            how = "called requestSubmit()"
        href, title, navigated = await _await_navigation(ctx, loader, url_before, args.timeout)
        if navigated:
            text = f"submitted ({how}); page is now {href} (title {json.dumps(title)})"
        else:
            text = f"submitted ({how}); no navigation followed"
            if target["invalid"]:
                text += "; the browser found invalid fields: " + "; ".join(target["invalid"])
        return ToolOutput(
            content=untrusted(text),
            summary=f"submit: {'now ' + href if navigated else 'no navigation'}"[:200],
            data={"navigated": navigated, "url": href, "title": title},
        )
