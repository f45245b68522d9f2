"""Key combos as CDP key events: ``key_events("Ctrl+Shift+K")`` and the tables behind it.

The named keys, their aliases, the modifier bits and the editing commands (select all, copy, cut,
paste, undo) that a Ctrl/Meta combo also sends, so that they work as they do for a user.
"""

from __future__ import annotations

from typing import Any

from actors.tools.tool_def import ToolError

__all__ = ["key_events"]


# --- keys -----------------------------------------------------------------------------------------

_NAMED_KEYS: dict[str, tuple[str, str, int, str]] = {
    # name: (key, code, windowsVirtualKeyCode, text)
    "Enter": ("Enter", "Enter", 13, "\r"),
    "Tab": ("Tab", "Tab", 9, ""),
    "Escape": ("Escape", "Escape", 27, ""),
    "Backspace": ("Backspace", "Backspace", 8, ""),
    "Delete": ("Delete", "Delete", 46, ""),
    "ArrowUp": ("ArrowUp", "ArrowUp", 38, ""),
    "ArrowDown": ("ArrowDown", "ArrowDown", 40, ""),
    "ArrowLeft": ("ArrowLeft", "ArrowLeft", 37, ""),
    "ArrowRight": ("ArrowRight", "ArrowRight", 39, ""),
    "Home": ("Home", "Home", 36, ""),
    "End": ("End", "End", 35, ""),
    "PageUp": ("PageUp", "PageUp", 33, ""),
    "PageDown": ("PageDown", "PageDown", 34, ""),
    "Space": (" ", "Space", 32, " "),
    "Insert": ("Insert", "Insert", 45, ""),
    **{f"F{n}": (f"F{n}", f"F{n}", 111 + n, "") for n in range(1, 13)},
}
_ALIASES = {
    "esc": "Escape",
    "return": "Enter",
    "up": "ArrowUp",
    "down": "ArrowDown",
    "left": "ArrowLeft",
    "right": "ArrowRight",
    "del": "Delete",
    "pgup": "PageUp",
    "pgdn": "PageDown",
    "space": "Space",
    " ": "Space",
    "spacebar": "Space",
}
_MODIFIERS = {
    "alt": 1,
    "option": 1,
    "ctrl": 2,
    "control": 2,
    "meta": 4,
    "cmd": 4,
    "command": 4,
    "super": 4,
    "shift": 8,
}
_COMMANDS = {"a": "selectAll", "c": "copy", "x": "cut", "v": "paste", "z": "undo"}


def key_events(combo: str) -> list[dict[str, Any]]:
    """The ``Input.dispatchKeyEvent`` params (down, up) for a combo like ``"Ctrl+Shift+K"``."""
    if combo in {"+", " "}:
        parts = [combo]
    else:
        parts = combo.split("+")
        if combo.endswith("++"):
            parts = [*parts[:-2], "+"]
    *mods, name = [p.strip() if p.strip() else p for p in parts]
    modifiers = 0
    for m in mods:
        bit = _MODIFIERS.get(m.lower())
        if bit is None:
            raise ToolError(f"unknown modifier {m!r} in {combo!r} (use Ctrl, Alt, Shift, Meta)")
        modifiers |= bit
    canon = _ALIASES.get(name.lower(), name)
    canon = next((k for k in _NAMED_KEYS if k.lower() == canon.lower()), canon)
    if canon in _NAMED_KEYS:
        key, code, vk, text = _NAMED_KEYS[canon]
    elif len(name) == 1:
        ch = name
        upper = ch.upper()
        key = upper if modifiers & 8 and ch.isalpha() else ch
        if modifiers & (1 | 2 | 4) and not modifiers & 8 and ch.isascii() and ch.isalpha():
            # A chord names a key, not a capital: Ctrl+K is what a user's Ctrl and k make,
            # key "k" (pages test `e.key === 'k'`); Ctrl+Shift+K stays "K".
            key = ch.lower()
        if ch.isalpha() and ch.isascii():
            code, vk = f"Key{upper}", ord(upper)
        elif ch.isdigit():
            code, vk = f"Digit{ch}", ord(ch)
        else:
            code, vk = "", 0
        text = key
    else:
        raise ToolError(f"unknown key {name!r}; use a character or a name like Enter, Tab, Escape")
    typing = bool(text) and not modifiers & (1 | 2 | 4)
    down: dict[str, Any] = {
        "type": "keyDown" if typing else "rawKeyDown",
        "key": key,
        "code": code,
        "windowsVirtualKeyCode": vk,
        "nativeVirtualKeyCode": vk,
        "modifiers": modifiers,
    }
    if typing:
        down["text"] = text
        down["unmodifiedText"] = text
    if modifiers & (2 | 4) and name.lower() in _COMMANDS:
        down["commands"] = [_COMMANDS[name.lower()]]
    up = {
        "type": "keyUp",
        "key": key,
        "code": code,
        "windowsVirtualKeyCode": vk,
        "nativeVirtualKeyCode": vk,
        "modifiers": modifiers,
    }
    return [down, up]
