"""The seam between the page tools and a browser tab: :class:`CdpSession`.

A ``CdpSession`` is bound to one tab and sends raw Chrome DevTools Protocol commands to it. In
production it goes through the extension's ``chrome.debugger``; in tests it is a direct websocket to
Chromium (``tests/helpers/cdp_ws.py``). The tools never see the transport.

Errors: every failure of ``send`` is a :class:`CdpError` carrying a stable
:class:`messages.errors.ErrorCode`::

    CdpError(code, message)
        REQUEST_TIMEOUT   no answer before the deadline (a page-changing command is never re-sent)
        STALE_REF         an element reference from an older document, or a detached element
        WAIT_TIMEOUT      something awaited on the page did not happen in time
        NOT_ALLOWED_URL   the tab shows a page Browy must not drive (protocol.md section 5)
        INTERNAL          CDP answered with an error (``cdp_code`` holds its numeric code)

A call that went through the extension (:mod:`actors.browser.cdp_proxy`) fails with
:class:`BrowserCallError`, whose ``outcome`` says what the caller may assume about the browser:

- ``"error"``: the call definitely did not happen (an error answer, or it was never sent), or it
  was a read;
- ``"unknown"``: a page-changing call was sent but no answer came (deadline, cancel, connection
  lost). It is reported as such and never sent again (protocol.md section 4,
  ``chat.tool_result`` outcome ``unknown``; section 5, "No replay").
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from messages.errors import BrowyError, ErrorCode

__all__ = [
    "BrowserCallError",
    "CdpError",
    "CdpSession",
    "ErrorCode",
    "Outcome",
    "is_context_gone",
    "outcome_of",
]

Outcome = Literal["error", "unknown"]


class CdpError(BrowyError):
    """A CDP command failed. ``code`` is stable; ``message`` is log detail, not for the wire.

    ``cdp_code`` is the numeric JSON-RPC error code CDP answered with, when there was one.
    """

    default_wire_message = "browser command failed"

    def __init__(
        self, code: ErrorCode | str, message: str = "", *, cdp_code: int | None = None
    ) -> None:
        super().__init__(message, code=ErrorCode(code))
        self.cdp_code = cdp_code

    @property
    def wire_message(self) -> str:
        """Fixed text per code; page or CDP detail stays in the log."""
        return {
            ErrorCode.STALE_REF: "element reference is stale: take a new snapshot",
            ErrorCode.REQUEST_TIMEOUT: "the browser did not answer in time",
            ErrorCode.WAIT_TIMEOUT: "the page did not reach the expected state in time",
            ErrorCode.NOT_ALLOWED_URL: "this page cannot be driven",
        }.get(self.code, self.default_wire_message)

    def __repr__(self) -> str:
        return f"CdpError({self.code.value!r}, {self.message!r})"


class BrowserCallError(CdpError):
    """A browser call failed. ``outcome`` is ``"unknown"`` when a page-changing call was sent and
    no answer came: the caller must report it as such and must not send it again."""

    def __init__(
        self, code: ErrorCode | str, message: str = "", *, outcome: Outcome = "error"
    ) -> None:
        super().__init__(code, message)
        self.outcome: Outcome = outcome

    @property
    def wire_message(self) -> str:
        if self.code is ErrorCode.CONNECTION_LOST:
            return "the browser connection was lost"
        if self.code is ErrorCode.CANCELLED:
            return "the browser call was cancelled"
        return super().wire_message


def outcome_of(exc: BaseException) -> Outcome:
    """``"unknown"`` if ``exc`` (or an exception it was raised from) says so, else ``"error"``.

    Tools may wrap a proxy error (e.g. the page tools turn a dead context into STALE_REF), so the
    ``__cause__``/``__context__`` chain is searched.
    """
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if getattr(cur, "outcome", None) == "unknown":
            return "unknown"
        cur = cur.__cause__ or cur.__context__
    return "error"


class CdpSession(Protocol):
    """Raw CDP bound to one tab (its top-level page target).

    ``page_changing=True`` marks commands that change the page (input, navigation): a transport
    must never retry or re-send them (protocol.md section 5, "No replay"); reads may be retried.
    ``timeout`` is the deadline in seconds; on expiry ``send`` raises
    ``CdpError(REQUEST_TIMEOUT)``. A CDP error answer raises ``CdpError(INTERNAL)`` with the CDP
    message in ``message`` and its numeric code in ``cdp_code``.
    """

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        page_changing: bool = False,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        """Send ``method`` with ``params`` and return CDP's ``result`` object."""
        ...


# The CDP error texts that mean "the execution context (so the document) you named is gone".
_CONTEXT_GONE = (
    "Cannot find context with specified id",
    "Execution context was destroyed",
    "Inspected target navigated or closed",
    "Cannot find default execution context",
)


def is_context_gone(exc: CdpError) -> bool:
    """True if ``exc`` says the execution context died, i.e. the document was replaced."""
    return exc.code is ErrorCode.INTERNAL and any(t in exc.message for t in _CONTEXT_GONE)
