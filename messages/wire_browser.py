"""What the host asks the extension to do in the browser (protocol.md sections 3 and 4).

``cdp.send`` (one CDP command, never trimmed) and the ``tab.*`` operations, each answered by a
``tool.result`` with the same ``callId``; v2 adds ``tab.close``, ``cdp.cancel`` (the host gave up on
a call) and ``control.release`` (a turn ended), and ``controlOwnerId`` on every request.
"""

from typing import Any, Literal

from pydantic import Field

from messages.wire_base import OutboundModel

__all__ = [
    "CdpCancel",
    "CdpSend",
    "ControlRelease",
    "TabActivate",
    "TabClose",
    "TabGetActive",
    "TabList",
    "TabNew",
]


class _BrowserCall(OutboundModel):
    # Section 4: cdp.send and tab.* carry the controlling turn's id in v2.
    session_id: str
    call_id: str
    control_owner_id: str | None = None  # v2


class CdpSend(_BrowserCall):
    """Run one CDP command; never trimmed (section 5). Answered by ``tool.result``."""

    type: Literal["cdp.send"] = "cdp.send"
    tab_id: int | None = None
    method: str
    params: dict[str, Any] = Field(default_factory=dict)
    #: v2 with the ``cdp.targetSessions`` capability: a child session of the tab (an
    #: out-of-process iframe attached by ``Target.setAutoAttach{flatten}``), not Browy's session.
    target_session_id: str | None = None


class TabNew(_BrowserCall):
    type: Literal["tab.new"] = "tab.new"
    url: str | None = None
    active: bool | None = None
    #: v2, capability ``tab.groups``: put the new tab in this window's tab group of that title
    #: (made if missing) — an MCP client's tabs are grouped under its name.
    group: str | None = None


class TabActivate(_BrowserCall):
    type: Literal["tab.activate"] = "tab.activate"
    tab_id: int


class TabList(_BrowserCall):
    type: Literal["tab.list"] = "tab.list"


class TabGetActive(_BrowserCall):
    type: Literal["tab.getActive"] = "tab.getActive"
    window_id: int | None = None  # v2


class TabClose(_BrowserCall):
    type: Literal["tab.close"] = "tab.close"
    tab_id: int


class CdpCancel(OutboundModel):
    """The host gave up on a call; the extension never answers it late."""

    type: Literal["cdp.cancel"] = "cdp.cancel"
    session_id: str
    call_id: str


class ControlRelease(OutboundModel):
    """The turn ended: detach from the tabs ``owner_id`` used. Settles no request."""

    type: Literal["control.release"] = "control.release"
    owner_id: str
