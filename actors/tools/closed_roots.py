"""Closed shadow roots: found through the DOM domain and handed to the snapshot's isolated world.

``attachShadow({mode: 'closed'})`` hides a root from every script — the page's other scripts and
our isolated world alike (``host.shadowRoot`` is null) — but not from the DOM domain:
``DOM.describeNode{pierce: true}`` lists a host's shadow roots with their ``shadowRootType``, and
``DOM.resolveNode{backendNodeId, executionContextId}`` gives our world an object for one. A
snapshot (``snapshot.js``) reports the hosts that may have such a root and that nobody asked about
yet (custom elements; empty, visible boxes of the tags that can host one);
:func:`adopt_closed_roots` asks the DOM domain about them all at once and hands each closed root
to the world (``__browy.adoptRoot``), which from then on walks, hit-tests and clicks inside it like
an open root. Each host is asked about once per document; a page without candidates costs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from actors.tools.cdp import CdpError, CdpSession

__all__ = ["adopt_closed_roots"]

_GROUP = "browy-closed-roots"
_ADOPT = "function () { return __browy.adoptRoot(this); }"


async def adopt_closed_roots(cdp: CdpSession, context_id: int) -> int:
    """Hand the closed shadow roots of the hosts the last snapshot reported to the isolated world
    ``context_id``; returns how many it adopted. Reads only."""
    try:
        res = await cdp.send(
            "Runtime.evaluate",
            {"expression": "__browy.takeUnasked()", "contextId": context_id, "objectGroup": _GROUP},
        )
        array = res.get("result", {}).get("objectId")
        if not array:
            return 0
        props = await cdp.send("Runtime.getProperties", {"objectId": array, "ownProperties": True})
        hosts = [
            p["value"]["objectId"]
            for p in props.get("result", [])
            if str(p.get("name", "")).isdigit() and p.get("value", {}).get("objectId")
        ]
        described = await asyncio.gather(
            *(_describe(cdp, host) for host in hosts), return_exceptions=True
        )
        roots = [
            int(root["backendNodeId"])
            for node in described
            if isinstance(node, dict)
            for root in node.get("shadowRoots", [])
            if root.get("shadowRootType") == "closed"
        ]
        adopted = await asyncio.gather(
            *(_adopt(cdp, root, context_id) for root in roots), return_exceptions=True
        )
        return sum(1 for ok in adopted if ok is True)
    finally:
        with contextlib.suppress(CdpError):
            await cdp.send("Runtime.releaseObjectGroup", {"objectGroup": _GROUP})


async def _describe(cdp: CdpSession, object_id: str) -> dict[str, Any]:
    res = await cdp.send("DOM.describeNode", {"objectId": object_id, "depth": 1, "pierce": True})
    node: dict[str, Any] = res.get("node", {})
    return node


async def _adopt(cdp: CdpSession, backend_node_id: int, context_id: int) -> bool:
    obj = await cdp.send(
        "DOM.resolveNode",
        {"backendNodeId": backend_node_id, "executionContextId": context_id, "objectGroup": _GROUP},
    )
    params = {"objectId": obj["object"]["objectId"], "functionDeclaration": _ADOPT}
    res = await cdp.send("Runtime.callFunctionOn", {**params, "returnByValue": True})
    return res.get("result", {}).get("value") is True
