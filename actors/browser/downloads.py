"""The downloads a browser connection reported: a bounded table, and who waits on it.

Our extension (protocol v2, capability ``downloads``) tells the host of every download Chrome
makes — ``download.started`` when one begins (``chrome.downloads.onCreated``), ``download.done``
when it completes or is interrupted (``chrome.downloads.onChanged``, ``state``). A page starts
downloads that no URL can fetch again: a ``blob:`` link, a form POST answered with a file. The
host keeps the newest :data:`KEEP` of each connection here, so

- an action that started one says so in its result (:mod:`actors.browser.action_downloads`),
  as an action that opened a tab does (:mod:`actors.browser.opened_tabs`), and
- ``wait_for_download`` (:mod:`actors.tools.download_tools`) waits for one to finish and copies
  the file Chrome wrote into the files sandbox.

Rules of the table (sans-I/O; the CDPProxy feeds it and settles the waiters):

- Each download gets a sequence number when the host first hears of it (``started`` or, if
  that frame was lost, ``done``); :meth:`DownloadTable.mark` is the newest number, so "the
  downloads since a mark" are those an action started. The numbers are the daemon's, not the
  table's: a session that kept a mark from a connection that went (a relay reconnect makes a
  new one, with a new table) still sees every download of the next connection as newer.
- A ``done`` is final: a later ``started`` for the same id does not bring it back.
- The oldest record is forgotten past :data:`KEEP`; a waiter never hangs on it — it waits with
  its own deadline (conventions rule 5).
- Only a path from a ``download.done{state: complete}`` is ever copied: the table is the only
  source of paths, and a page cannot send native messages.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import ClassVar, Literal

from messages.wire_inbound import DownloadDone, DownloadStarted

__all__ = ["KEEP", "DownloadRecord", "DownloadTable", "DownloadWaiter"]

#: Downloads kept per connection (the newest).
KEEP = 50

DownloadState = Literal["in_progress", "complete", "interrupted"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DownloadRecord:
    """One download as the browser reported it. ``saved``: where ``wait_for_download`` put its
    copy in the files sandbox (relative), once it did."""

    download_id: int
    seq: int
    url: str
    final_url: str
    mime: str
    referrer: str
    state: DownloadState
    filename: str = ""
    bytes: int = 0
    error: str | None = None
    saved: str | None = None

    @property
    def finished(self) -> bool:
        return self.state != "in_progress"

    @property
    def name(self) -> str:
        """The file's own name (Chrome's, from the path it wrote), or "" before it is known."""
        return self.filename.replace("\\", "/").rsplit("/", 1)[-1]

    def describe(self) -> str:
        """One line for the model: which download, what it is and how far it got."""
        where = self.final_url or self.url
        if where.startswith("blob:") or where.startswith("data:"):
            where = where[:5] + " URL made by the page"
        what = f"download {self.download_id}: {self.name or '(name not known yet)'}"
        kind = f"{self.mime or 'unknown type'}"
        if self.state == "complete":
            return f"{what} ({kind}, {self.bytes} bytes, complete) from {where[:200]}"
        if self.state == "interrupted":
            return f"{what} ({kind}) from {where[:200]} failed: {self.error or 'interrupted'}"
        return f"{what} ({kind}) from {where[:200]}, still downloading"


#: Called once with the record that satisfies a waiter (finished), or None when it is dropped.
DownloadWaiter = Callable[[DownloadRecord | None], None]


class DownloadTable:
    """The newest :data:`KEEP` downloads of one connection, and the waiters on them."""

    _seq: ClassVar[itertools.count[int]] = itertools.count(1)  # one numbering per daemon

    def __init__(self, keep: int = KEEP) -> None:
        self._keep = keep
        self._mark = 0
        self._records: OrderedDict[int, DownloadRecord] = OrderedDict()
        # (download id or None = the first to finish with seq > after, after, callback)
        self._waiters: list[tuple[int | None, int, DownloadWaiter]] = []

    # --- what the browser said --------------------------------------------------------------

    def update(self, msg: DownloadStarted | DownloadDone) -> DownloadRecord:
        """Record a ``download.started`` / ``download.done``; settle the waiters it satisfies."""
        old = self._records.get(msg.download_id)
        if isinstance(msg, DownloadStarted):
            if old is not None:
                return old  # a repeat, or late after its done: the done stands
            record = self._new(msg, "in_progress")
        else:
            base = old if old is not None else self._new(msg, msg.state)
            record = replace(
                base,
                state=msg.state,
                url=msg.url or base.url,
                final_url=msg.final_url or base.final_url,
                mime=msg.mime or base.mime,
                referrer=msg.referrer or base.referrer,
                filename=msg.filename,
                bytes=max(0, msg.bytes),
                error=msg.error,
            )
        self._records[msg.download_id] = record
        while len(self._records) > self._keep:
            self._records.popitem(last=False)
        if record.finished:
            self._settle(record)
        return record

    def _new(self, msg: DownloadStarted | DownloadDone, state: DownloadState) -> DownloadRecord:
        self._mark = next(self._seq)
        return DownloadRecord(
            download_id=msg.download_id,
            seq=self._mark,
            url=msg.url,
            final_url=msg.final_url,
            mime=msg.mime,
            referrer=msg.referrer,
            state=state,
        )

    def saved(self, download_id: int, path: str) -> None:
        """Its copy is in the sandbox at ``path``: a second ``wait_for_download`` reports it."""
        record = self._records.get(download_id)
        if record is not None:
            self._records[download_id] = replace(record, saved=path)

    # --- what the tools ask -----------------------------------------------------------------

    def mark(self) -> int:
        """The sequence number of the newest download heard of (0: none yet)."""
        return self._mark

    def since(self, mark: int) -> list[DownloadRecord]:
        """The downloads first heard of after ``mark``, oldest first."""
        return [r for r in self._records.values() if r.seq > mark]

    def get(self, download_id: int) -> DownloadRecord | None:
        return self._records.get(download_id)

    def pick(self, download_id: int | None, after: int) -> DownloadRecord | None:
        """The download a ``wait_for_download`` means: ``download_id``, else the newest one not
        saved yet that was heard of after ``after``."""
        if download_id is not None:
            return self._records.get(download_id)
        unsaved = [r for r in self._records.values() if r.seq > after and r.saved is None]
        return unsaved[-1] if unsaved else None

    def wait(self, download_id: int | None, after: int, callback: DownloadWaiter) -> None:
        """Call ``callback`` once with the download when it has finished: ``download_id``, or
        (None) the first one heard of after ``after`` to finish. At once if it already has."""
        record = self.pick(download_id, after)
        if record is not None and record.finished:
            callback(record)
            return
        if record is not None and download_id is None:
            download_id = record.download_id  # an unsaved one is running: wait for that one
        self._waiters.append((download_id, after, callback))

    def _settle(self, record: DownloadRecord) -> None:
        keep: list[tuple[int | None, int, DownloadWaiter]] = []
        for wanted, after, callback in self._waiters:
            if wanted == record.download_id or (wanted is None and record.seq > after):
                callback(record)
            else:
                keep.append((wanted, after, callback))
        self._waiters = keep

    def drop_waiters(self) -> None:
        """The connection is gone: every waiter hears None."""
        waiters, self._waiters = self._waiters, []
        for _, _, callback in waiters:
            callback(None)

    def forget_waiter(self, callback: DownloadWaiter) -> None:
        """A waiter that stopped waiting (its deadline passed)."""
        self._waiters = [w for w in self._waiters if w[2] is not callback]
