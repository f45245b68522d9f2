"""The tools' side of a connection's downloads, offered by :class:`~actors.browser.tabs.ProxyTabs`
and :class:`~actors.browser.tabs.TabCdpSession`: the ``DownloadSource`` seam of
:mod:`actors.tools.download_tools`, and the mark a page action reads
(:mod:`actors.tools.page_world`: a navigation that turned into a download).

They ask the connection's CDPProxy, which keeps its :class:`~actors.browser.downloads.DownloadTable`
(:class:`~actors.browser.proxy_messages.DownloadQuery`). Every ask has a deadline; a link that
is gone answers None (no mark, no download), never a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Protocol

from actors.browser.downloads import DownloadRecord
from actors.browser.proxy_messages import DownloadQuery, DownloadSaved, ProxyMsg
from actors.runtime.errors import ActorError
from actors.runtime.live_ref import LiveRef

__all__ = ["DownloadCalls"]


class _Calls(Protocol):
    proxy: LiveRef[ProxyMsg]


class DownloadCalls:
    """Mixed into the tab seams: ``calls.proxy`` is the connection's CDPProxy;
    ``reports_downloads`` says whether its browser tells the host of downloads (v2, capability
    ``downloads``)."""

    calls: _Calls
    reports_downloads: bool = False

    @property
    def _download_proxy(self) -> LiveRef[ProxyMsg]:
        return self.calls.proxy

    async def _ask(self, query: DownloadQuery) -> Any:
        try:
            return await self._download_proxy.ask(query, timeout=5.0)
        except (ActorError, LookupError, TimeoutError):
            return None

    async def download_mark(self) -> int | None:
        """The newest download's number, or None when the connection reports none."""
        if not self.reports_downloads:
            return None
        mark = await self._ask(DownloadQuery(op="mark"))
        return mark if isinstance(mark, int) else None

    async def downloads_since(self, after: int) -> list[DownloadRecord]:
        found = await self._ask(DownloadQuery(op="since", after=after))
        return list(found) if isinstance(found, list) else []

    async def wait_download(
        self, download_id: int | None, after: int, timeout: float
    ) -> DownloadRecord | None:
        """The download (``download_id``, else the first heard of after ``after``) once it has
        finished; None when ``timeout`` passes or the connection goes first."""
        future: asyncio.Future[DownloadRecord | None] = asyncio.get_running_loop().create_future()

        def settle(record: DownloadRecord | None) -> None:
            if not future.done():
                future.set_result(record)

        wait = DownloadQuery(op="wait", download_id=download_id, after=after, waiter=settle)
        await self._ask(wait)
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            return None
        finally:
            if not future.done():
                future.cancel()
            with contextlib.suppress(ActorError, LookupError):
                self._download_proxy.tell_nowait(DownloadQuery(op="forget", waiter=settle))

    async def download_saved(self, download_id: int, path: str) -> None:
        with contextlib.suppress(ActorError, LookupError):
            await self._download_proxy.tell(
                DownloadSaved(download_id=download_id, path=path), timeout=5.0
            )
