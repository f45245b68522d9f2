"""Browy's version: this one constant, nowhere else.

``pyproject.toml`` reads the distribution's version from here (``[tool.setuptools.dynamic]``), so
the installed ``browy-host`` metadata, the link's hello (``package_version``), the daemon's
``status``, ``browy --version``, ``browy doctor`` and the MCP server's ``serverInfo`` all say the
same. A constant rather than ``importlib.metadata``: the relay, which Chrome starts for every
connection, imports this, and ``importlib.metadata`` would add its imports to every start.
"""

from __future__ import annotations

__all__ = ["VERSION"]

VERSION = "0.1.0"
