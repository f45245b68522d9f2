"""Downloads the page starts itself: ``wait_for_download``, and saving one into the sandbox.

``download_file`` fetches a URL from the host. A page also starts downloads that no URL can
fetch again — a ``blob:`` link its script made, a form POST answered with a file, an export
button. The browser saves those in its own download folder, and our extension (protocol v2,
capability ``downloads``) tells the host of each (:mod:`actors.browser.downloads`).

- The action that started one says so in its result (:mod:`actors.browser.action_downloads`);
  one that had already finished is saved into the files folder right away.
- ``wait_for_download{download_id?, timeout_s?, file_name?}`` waits (default 30 s) for a
  download to finish — the one named, else the newest one not saved yet that this session's
  actions started, else the next one to finish — and saves it as ``downloads/<its name>`` (never
  overwriting: ``name-2.ext``), reporting that path. A download already saved is reported,
  not copied again. Only downloads started after the session's first action are reachable:
  the user's own downloads from before are not the model's to pick up.

A v1 connection (and an extension without the capability) reports no downloads: the tool says
so and points to ``download_file``. Saving writes the host's disk, not the page: not
page-changing, and not retried.
"""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

from pydantic import Field

from actors.browser.downloads import DownloadRecord
from actors.tools.download_copy import copy_download
from actors.tools.files import FileSandbox
from actors.tools.registry import Registry
from actors.tools.tool_def import ToolArgs, ToolContext, ToolError, ToolOutput
from messages.errors import ErrorCode

__all__ = [
    "FROM_KEY",
    "RUNNING_KEY",
    "TOLD_KEY",
    "DownloadSource",
    "download_mark_of",
    "register_download_tools",
    "save_record",
    "source_of",
]

#: Session state: the download mark before the session's first action (set by the ToolWorker).
FROM_KEY = "downloads.from"
#: Session state: the newest download this session has been told of (an action's result, or
#: ``wait_for_download``).
TOLD_KEY = "downloads.told"
#: Session state: downloads it was told of while they ran (a later action says how they ended).
RUNNING_KEY = "downloads.running"


@runtime_checkable
class DownloadSource(Protocol):
    """The downloads of a session's browser connection (:class:`actors.browser.tabs.ProxyTabs`)."""

    reports_downloads: bool

    async def download_mark(self) -> int | None: ...
    async def downloads_since(self, after: int) -> list[DownloadRecord]: ...
    async def wait_download(
        self, download_id: int | None, after: int, timeout: float
    ) -> DownloadRecord | None: ...
    async def download_saved(self, download_id: int, path: str) -> None: ...


async def download_mark_of(cdp: object) -> int:
    """The connection's newest download number, -1 when it reports none (v1, an older
    extension, a session without the seam): what a page action reads before it acts, to tell a
    navigation that turned into a download (:mod:`actors.tools.page_world`)."""
    if not isinstance(cdp, DownloadSource) or not cdp.reports_downloads:
        return -1
    try:
        found = await cdp.download_mark()
    except Exception:  # a connection that cannot say: no download check, the action stands
        return -1
    return found if isinstance(found, int) else -1


def source_of(tabs: object) -> DownloadSource | None:
    """The connection's downloads, or None when it does not report them (v1, older extension)."""
    if isinstance(tabs, DownloadSource) and tabs.reports_downloads:
        return tabs
    return None


async def save_record(
    box: FileSandbox, source: DownloadSource, record: DownloadRecord, wanted: str | None = None
) -> str:
    """Copy a completed download into ``box`` (once: a saved one gives its path again) and
    return its sandbox-relative path. :class:`ToolError` says why it was not."""
    if record.saved is not None and wanted is None:
        return record.saved
    if record.state == "interrupted":
        raise ToolError(f"{record.describe()}; nothing to save")
    if record.state != "complete":
        raise ToolError(f"{record.describe()}; call wait_for_download to save it when done")
    path = await asyncio.to_thread(
        copy_download,
        box,
        record.filename,
        expected_bytes=record.bytes,
        name=record.name,
        wanted=wanted,
    )
    rel = box.relative(path)
    await source.download_saved(record.download_id, rel)
    return rel


class WaitDownloadArgs(ToolArgs):
    download_id: int | None = Field(
        default=None, description="the download's number from an action's result; default: "
        "the newest one not saved yet, else the next to finish",
    )  # fmt: skip
    timeout_s: float = Field(default=30.0, ge=0.5, le=120.0, description="how long to wait")
    file_name: str | None = Field(
        default=None, description="where to save it in the files folder (default downloads/NAME)"
    )


def register_download_tools(reg: Registry) -> None:
    """Add ``wait_for_download`` to ``reg``."""

    @reg.register(
        "wait_for_download",
        "Wait for a download the page started itself (an export button, a blob: link, a form "
        "that answers with a file) to finish, and save it in Browy's files folder; returns the "
        "saved path. Click first, then call this. For a plain file URL, download_file is "
        "simpler.",
        WaitDownloadArgs,
        page_changing=False,
        retry_on_timeout=False,
    )
    async def wait_for_download(args: WaitDownloadArgs, ctx: ToolContext) -> ToolOutput:
        if not isinstance(ctx.files, FileSandbox):
            raise ToolError("there is no files folder to save into")
        source = source_of(ctx.tabs)
        if source is None:
            raise ToolError(
                "this browser connection does not report downloads (an older extension or "
                "protocol 1); if the file has a URL, use download_file with it",
                code=ErrorCode.NO_CAPABILITY,
            )
        start = ctx.state.get(FROM_KEY)
        if not isinstance(start, int):
            start = await source.download_mark()
            if start is None:
                raise ToolError("the browser connection is gone", code=ErrorCode.CONNECTION_LOST)
        if args.download_id is not None:
            known = {r.download_id: r for r in await source.downloads_since(start)}
            if args.download_id not in known:
                mine = ", ".join(str(i) for i in known) or "none yet"
                raise ToolError(
                    f"download {args.download_id} is not one this session's actions started "
                    f"(those are: {mine})"
                )
        if ctx.progress is not None:
            await ctx.progress("waiting for the download to finish")
        record = await source.wait_download(args.download_id, start, args.timeout_s)
        if record is None:
            busy = [r.describe() for r in await source.downloads_since(start) if not r.finished]
            more = f" Still running: {'; '.join(busy)}." if busy else ""
            raise ToolError(
                f"no download finished in {args.timeout_s:g} s.{more} Start one first (click "
                "the page's download button), or wait longer",
                code=ErrorCode.WAIT_TIMEOUT,
            )
        saved = await save_record(ctx.files, source, record, args.file_name)
        told = ctx.state.get(TOLD_KEY)
        if isinstance(told, int) and record.seq > told:
            ctx.state[TOLD_KEY] = record.seq  # the next action's result need not repeat it
        running = ctx.state.get(RUNNING_KEY)
        if isinstance(running, set):
            running.discard(record.download_id)
        where = record.final_url or record.url
        return ToolOutput(
            content=f"saved download {record.download_id} ({record.bytes} bytes, "
            f"{record.mime or 'unknown type'}) from {where[:200]} as {saved} in the files folder",
            summary=f"downloaded {saved}"[:200],
            data={"file": saved, "bytes": record.bytes, "downloadId": record.download_id},
        )
