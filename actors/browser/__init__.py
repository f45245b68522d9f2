"""The browser side of a turn: browser calls (CDPProxy), the pinned tab, and running tools."""
