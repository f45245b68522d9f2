"""Downloads an action started, said in the action's result (as :mod:`opened_tabs` says tabs).

Before an action that can start a download (a click, a key press, a form submission, a script,
a navigation) the ToolWorker reads the connection's download mark; after it, the downloads the
browser reported meanwhile are the ones the page started. A download that already finished is
saved into the files folder at once and its path said; one still running is named with its
number, for ``wait_for_download``, and said again (saved) by a later action once it has
finished. A download that begins only after the action returned (a slow form POST) is said by
the session's next action, or picked up by ``wait_for_download``: each session remembers up to
which download it has been told, and which of those were still running.

Nothing here runs on a connection that does not report downloads (v1, an older extension).
"""

from __future__ import annotations

import logging
from typing import Any

from actors.browser.downloads import DownloadRecord
from actors.browser.opened_tabs import OPENING_TOOLS
from actors.tools.download_tools import FROM_KEY, RUNNING_KEY, TOLD_KEY, save_record, source_of
from actors.tools.files import FileSandbox
from actors.tools.tool_def import ToolError

__all__ = ["DOWNLOADING_TOOLS", "before_action", "note_after_action"]

log = logging.getLogger(__name__)

#: The tools whose action may start a download.
DOWNLOADING_TOOLS = OPENING_TOOLS | {"navigate", "wait_for"}


async def before_action(tabs: Any, state: dict[str, Any]) -> bool:
    """Note where the connection's downloads stand before an action; False if it reports none."""
    source = source_of(tabs)
    if source is None:
        return False
    mark = await source.download_mark()
    if mark is None:
        return False
    state.setdefault(FROM_KEY, mark)  # the session's first action: older ones are the user's
    state.setdefault(TOLD_KEY, mark)
    return True


async def note_after_action(tabs: Any, state: dict[str, Any], box: FileSandbox) -> str:
    """What the action's result says of the downloads started since the session was last told,
    and of those it was told of while they ran that have finished since ("" if none); finished
    ones are saved into ``box`` first."""
    source = source_of(tabs)
    told, start = state.get(TOLD_KEY), state.get(FROM_KEY)
    if source is None or not isinstance(told, int) or not isinstance(start, int):
        return ""
    running: set[int] = state.setdefault(RUNNING_KEY, set())
    listed = [
        r
        for r in await source.downloads_since(start)
        if r.seq > told or (r.download_id in running and r.finished)
    ]
    if not listed:
        return ""
    state[TOLD_KEY] = max(told, *(r.seq for r in listed))
    running.difference_update(r.download_id for r in listed if r.finished)
    running.update(r.download_id for r in listed if not r.finished)
    head = "The page started a download:" if any(r.seq > told for r in listed) else "Downloads:"
    return "\n".join([head] + [await _line(source, r, box) for r in listed])


async def _line(source: Any, record: DownloadRecord, box: FileSandbox) -> str:
    if record.state == "complete":
        try:
            saved = await save_record(box, source, record)
        except ToolError as exc:
            return f"- {record.describe()}; not saved: {exc.message}"
        except OSError:
            log.exception("saving download %d failed", record.download_id)
            return f"- {record.describe()}; it could not be saved into the files folder"
        return f"- {record.describe()}; saved in the files folder as {saved}"
    if record.state == "interrupted":
        return f"- {record.describe()}"
    return (
        f"- {record.describe()}: call wait_for_download with download_id "
        f"{record.download_id} to save it when it is done"
    )
