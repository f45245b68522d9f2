"""Browser tools: the page model (snapshot + index actions) over a raw CDP session.

``cdp`` holds the seam (:class:`~actors.tools.cdp.CdpSession`), ``page`` the snapshot and the
index actions; ``snapshot.js`` is the in-page indexer they inject into an isolated world.
"""

from __future__ import annotations

from actors.tools.cdp import CdpError, CdpSession
from actors.tools.page import ActionResult, ElementPoint, PageTools, Snapshot

__all__ = ["ActionResult", "CdpError", "CdpSession", "ElementPoint", "PageTools", "Snapshot"]
