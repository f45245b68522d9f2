"""What the panel, the journal and the log may see of a tool call's arguments.

Text typed into a secret field (password, card number, CVC, one-time code …) is typed into the
page but never echoed back (protocol.md section 5): it is replaced with :data:`MASK`. Which field
is secret is one rule (:mod:`actors.tools.secret_rule`), applied to the element itself where the
host can reach it, to the field's name, label or selector otherwise:

- ``type_index``: what the last snapshot said of element [index] (the page's own verdict);
- ``fill_input``: the element the selector picks, asked of the page;
- ``fill_form``: each key's field, asked of the page (``forms.js`` finds it as ``fill_form`` does);
- ``press_keys`` / ``press_key``: the focused element (keys typed into a password field).

When the page cannot be asked (no tab, a page Browy may not script) the names decide. The live
model call keeps the real arguments.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from actors.tools.forms import forms_call
from actors.tools.pinned_tab import TurnBrowser
from actors.tools.secret_rule import js_rule, name_is_secret
from messages.errors import BrowyError

__all__ = ["MASK", "mask_secret_args", "masked_tool_calls", "secret_view"]

log = logging.getLogger(__name__)

MASK = "••••"
#: How long the host waits for the page to say which fields are secret.
PROBE_TIMEOUT_S = 2.0


def mask_secret_args(
    name: str, args: dict[str, Any], browser: TurnBrowser | None
) -> dict[str, Any]:
    """*args* masked by what is known without asking the page: the last snapshot's secret
    elements, and field names, labels and selectors."""
    return _masked(name, args, browser, None)


async def secret_view(
    name: str, args: dict[str, Any], browser: TurnBrowser | None
) -> dict[str, Any]:
    """*args* as the panel, the journal and the log may see them (see the module docstring)."""
    return _masked(name, args, browser, await _ask_page(name, args, browser))


def _masked(
    name: str, args: dict[str, Any], browser: TurnBrowser | None, page: Any
) -> dict[str, Any]:
    if name == "type_index" and isinstance(args.get("text"), str):
        index = args.get("index")
        if browser is not None and isinstance(index, int) and browser.is_secret(index):
            return {**args, "text": MASK}
    elif name == "fill_input" and isinstance(args.get("value"), str):
        if page is True or name_is_secret(str(args.get("selector", ""))):
            return {**args, "value": MASK}
    elif name == "fill_form" and isinstance(args.get("fields"), dict):
        verdicts = page if isinstance(page, list) else []
        fields = {}
        for i, (key, value) in enumerate(args["fields"].items()):
            by_page = verdicts[i] if i < len(verdicts) else None
            secret = by_page is True or (by_page is None and name_is_secret(str(key)))
            fields[key] = MASK if secret and isinstance(value, str) else value
        return {**args, "fields": fields}
    elif name == "press_keys" and page is True:
        return {**args, "keys": MASK}
    elif name == "press_key" and page is True and len(str(args.get("key", ""))) == 1:
        return {**args, "key": MASK}
    return args


async def _ask_page(name: str, args: dict[str, Any], browser: TurnBrowser | None) -> Any:
    """The page's verdict (True/False, or a list for fill_form); None when it cannot be asked."""
    if name == "fill_input":
        target = f"document.querySelector({json.dumps(str(args.get('selector', '')))})"
        expression = f"(() => {{ {js_rule()}\n return isSecretField({target}); }})()"
    elif name in ("press_keys", "press_key"):
        expression = f"(() => {{ {js_rule()}\n return isSecretField(deepActiveElement()); }})()"
    elif name == "fill_form" and isinstance(args.get("fields"), dict):
        expression = forms_call("secretKeys", args.get("form"), list(args["fields"]))
    else:
        return None
    if browser is None or browser.tab_id is None:
        return None
    try:
        result = await browser.session().send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True},
            timeout=PROBE_TIMEOUT_S,
        )
    except BrowyError as exc:
        log.info("could not ask the page which fields are secret: %s", exc.wire_message)
        return None
    return result.get("result", {}).get("value")


async def masked_tool_calls(raw: Any, calls: list[Any], browser: TurnBrowser | None) -> Any:
    """The assistant message's ``tool_calls`` as the journal keeps them: arguments typed into
    secret fields masked (protocol.md section 5). The live call already went to the model.

    Keys pressed in the same reply as a call on a secret field are masked too: they are most
    likely typed into it (the focused element is asked again when each call runs)."""
    if not isinstance(raw, list):
        return raw
    views = {
        c.id: await secret_view(c.name, c.arguments, browser)
        for c in calls
        if c.arguments is not None
    }
    secret_nearby = any(views[c.id] is not c.arguments for c in calls if c.id in views)
    by_id = {c.id: c for c in calls}
    out = []
    for entry in raw:
        call = by_id.get(entry.get("id")) if isinstance(entry, dict) else None
        kept = entry
        if call is not None and call.id in views:
            masked = views[call.id]
            if secret_nearby and call.name in ("press_keys", "press_key"):
                masked = {k: (MASK if k in ("keys", "key") else v) for k, v in masked.items()}
            if masked is not call.arguments:
                fn = dict(entry.get("function", {}))
                fn["arguments"] = json.dumps(masked)
                kept = {**entry, "function": fn}
        out.append(kept)
    return out
