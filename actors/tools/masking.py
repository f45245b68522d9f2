"""What the panel, the journal and the log may see of a tool call's arguments.

Text typed into a secret field (password, card number, CVC) is typed into the page but never
echoed back (protocol.md section 5): :func:`mask_secret_args` replaces it with a mask. The live
model call keeps the real arguments.
"""

from __future__ import annotations

import re
from typing import Any

from actors.tools.pinned_tab import TurnBrowser

__all__ = ["MASK", "SECRET_NAME", "mask_secret_args"]

#: Names of fields whose values are secrets when the page does not say so itself.
SECRET_NAME = re.compile(r"pass|pwd|card.?num|cc.?num|cvc|cvv|csc|secret|token|otp|pin\b", re.I)
MASK = "••••"


def mask_secret_args(
    name: str, args: dict[str, Any], browser: TurnBrowser | None
) -> dict[str, Any]:
    """*args* as the panel, the journal and the log may see them: text typed into a secret
    field is masked (protocol.md section 5 — it is typed into the page, never echoed back).
    The live model call keeps the real arguments."""
    if name in ("type_index", "fill_input") and isinstance(
        args.get("text", args.get("value")), str
    ):
        key = "text" if "text" in args else "value"
        index = args.get("index")
        secret = (
            browser is not None and isinstance(index, int) and browser.is_secret(index)
        ) or bool(SECRET_NAME.search(str(args.get("selector", ""))))
        if secret:
            return {**args, key: MASK}
    if name == "fill_form" and isinstance(args.get("fields"), dict):
        fields = {k: (MASK if SECRET_NAME.search(str(k)) else v) for k, v in args["fields"].items()}
        return {**args, "fields": fields}
    return args
