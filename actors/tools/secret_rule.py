"""The one rule for "this field holds a secret", shared by the host and the page scripts.

The data is ``secret_fields.json``: input types, autocomplete tokens (``one-time-code``,
``current-password``, ``cc-number`` …), a name pattern (many languages) and a code pattern (for
``inputmode=numeric`` one-time codes). ``secret_rule.js`` applies it to an element in the page
(:func:`js_rule` is that script with the data filled in, inserted into ``snapshot.js`` and
``forms.js`` at the ``/*BROWY_SECRET_RULE*/`` marker); :func:`name_is_secret` applies the name
pattern to a field name, label or selector when the host has no element to look at.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

__all__ = ["MARKER", "RULE", "SECRET_NAME", "js_rule", "name_is_secret", "with_rule"]

_HERE = resources.files("actors.tools")
RULE: dict[str, Any] = json.loads(_HERE.joinpath("secret_fields.json").read_text("utf-8"))
SECRET_NAME = re.compile(RULE["name_pattern"], re.IGNORECASE)
#: Where a page script wants the rule.
MARKER = "/*BROWY_SECRET_RULE*/"

_JS = _HERE.joinpath("secret_rule.js").read_text("utf-8")


def js_rule() -> str:
    """``secret_rule.js`` with the data in: ``isSecretField(el)``, ``deepActiveElement()``."""
    data = {k: v for k, v in RULE.items() if not k.startswith("_")}
    return _JS.replace("__SECRET_RULE__", json.dumps(data, ensure_ascii=False))


def with_rule(script: str) -> str:
    """A page script with the rule inserted at its :data:`MARKER` (which it must have)."""
    if MARKER not in script:
        raise ValueError("the page script has no place for the secret rule")
    return script.replace(MARKER, js_rule(), 1)


def name_is_secret(text: str) -> bool:
    """Does a field's name, label, id or selector say it holds a secret?"""
    return bool(SECRET_NAME.search(text))
