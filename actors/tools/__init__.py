"""The tools: each declared once as data in a :class:`~actors.tools.registry.Registry`.

:mod:`actors.tools.cdp` is the seam to a browser tab, :mod:`actors.tools.page` the snapshot and
index actions (``snapshot.js`` is the in-page indexer injected into an isolated world), and
:mod:`actors.tools.catalog` puts every tool in one registry.
"""
