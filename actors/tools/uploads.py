"""Files from the sandbox into the page: ``upload_index``, ``upload_file`` and ``drop_files``.

They take paths in the files sandbox only (:class:`actors.tools.files.FileSandbox.resolve`
refuses absolute paths, ``..`` and symlinks that lead out).

An upload is read back: a listener on the input records the files its ``change`` event carried,
and the input's files are read after. The names given must be what the page received (a page may
take them and empty the input, as upload widgets do: that is said); anything else fails, saying
what the input holds. ``drop_files`` drops them on a drop zone
(:func:`actors.tools.drag.drop_files`).
"""

from __future__ import annotations

import asyncio
from pathlib import PurePath
from typing import Any

from pydantic import Field

from actors.tools.cdp import CdpSession
from actors.tools.files import FileSandbox
from actors.tools.handles import (
    GROUP,
    action_output,
    element_handle,
    index_browser,
    release_handles,
    selector_object,
)
from actors.tools.registry import Registry
from actors.tools.shared import untrusted
from actors.tools.tool_def import ToolArgs, ToolContext, ToolError, ToolOutput
from messages.errors import ErrorCode

__all__ = ["DropArgs", "UploadFileArgs", "UploadIndexArgs", "register_upload_tools"]


class UploadIndexArgs(ToolArgs):
    index: int = Field(ge=0, description="the element number from inspect_page")
    paths: list[str] = Field(min_length=1, description="files in Browy's files folder (relative)")


class DropArgs(ToolArgs):
    index: int | None = Field(default=None, ge=0, description="the drop zone's number")
    text: str | None = Field(
        default=None,
        min_length=1,
        max_length=500,
        description="or the text it shows, when it has no number",
    )
    paths: list[str] = Field(min_length=1, description="files in Browy's files folder (relative)")


class UploadFileArgs(ToolArgs):
    selector: str = Field(description="CSS selector of an <input type=file>")
    paths: list[str] = Field(min_length=1, description="files in Browy's files folder (relative)")


async def _set_files(cdp: CdpSession, object_id: str, files: list[str], label: str) -> str:
    node = (await cdp.send("DOM.describeNode", {"objectId": object_id}))["node"]
    attrs = node.get("attributes", [])
    kind = dict(zip(attrs[::2], attrs[1::2], strict=False)).get("type", "").lower()
    if node.get("nodeName") != "INPUT" or kind != "file":
        raise ToolError(f"{label} is not a file input (<{node.get('localName')}>)")
    if len(files) > 1 and "multiple" not in attrs[::2]:
        raise ToolError(f"{label} takes one file; {len(files)} were given")
    watch = await cdp.send(
        "Runtime.callFunctionOn",
        {"objectId": object_id, "functionDeclaration": _WATCH_JS, "objectGroup": GROUP},
    )
    if watch.get("exceptionDetails") or "objectId" not in watch.get("result", {}):
        raise ToolError(f"{label} is disabled: a user cannot pick files for it now")
    await cdp.send(
        "DOM.setFileInputFiles",
        {"files": files, "backendNodeId": node["backendNodeId"]},
        page_changing=True,
    )
    res = await cdp.send(
        "Runtime.callFunctionOn",
        {
            "objectId": watch["result"]["objectId"],
            "functionDeclaration": "function () { return this.read(); }",
            "returnByValue": True,
        },
    )
    return _upload_verdict(res.get("result", {}).get("value") or {}, files, label)


_WATCH_JS = """function () {
  const el = this, rec = { changes: 0, names: null };
  if (el.disabled) throw new Error('disabled');
  el.addEventListener('change', () => {
    rec.changes += 1; rec.names = Array.from(el.files || [], (f) => f.name);
  }, { capture: true, once: true });
  rec.read = () => ({ changes: rec.changes, names: rec.names,
    now: el.isConnected ? Array.from(el.files || [], (f) => f.name) : null });
  return rec;
}"""


def _upload_verdict(rec: dict[str, Any], files: list[str], label: str) -> str:
    """What the read-back says: a note when the page has the files, else ToolError."""
    want = [PurePath(f).name for f in files]
    got, now = rec.get("names"), rec.get("now")
    listed = ", ".join(want)
    if now == want and got in (None, want):
        return f"set {len(files)} file(s) on {label}: {listed}"
    if got == want:
        where = "the input left the page" if now is None else "the input is empty again"
        return (
            f"set {len(files)} file(s) on {label}: {listed}; the page received them and "
            f"{where} (upload widgets do this once they have taken the files)"
        )
    holds = ", ".join(now) if now else "no file"
    raise ToolError(f"not done: {label} holds {holds}, not {listed} (the page refused them?)")


async def _sandbox_paths(ctx: ToolContext, paths: list[str]) -> list[str]:
    if not isinstance(ctx.files, FileSandbox):
        raise ToolError("there is no files folder to upload from")
    box = ctx.files

    def check() -> list[str]:
        out = []
        for rel in paths:
            path = box.resolve(rel)  # refuses absolute paths, '..', links that lead out
            if not path.is_file():
                raise ToolError(f"no file {rel!r} in the files folder")
            out.append(str(path))
        return out

    return await asyncio.to_thread(check)


def register_upload_tools(reg: Registry) -> None:
    """Add ``upload_index``, ``upload_file`` and ``drop_files`` to ``reg``."""

    @reg.register(
        "upload_index",
        "Put files from Browy's files folder into the file input [index].",
        UploadIndexArgs,
        page_changing=True,
    )
    async def upload_index(args: UploadIndexArgs, ctx: ToolContext) -> ToolOutput:
        files = await _sandbox_paths(ctx, args.paths)
        browser = index_browser(ctx)
        async with element_handle(browser.page(), args.index, browser.token()) as (cdp, obj):
            text = await _set_files(cdp, obj, files, f"[{args.index}]")
        return ToolOutput(content=text, summary=f"upload to [{args.index}]")

    @reg.register(
        "upload_file",
        "Put files from Browy's files folder into the file input matching a CSS selector.",
        UploadFileArgs,
        page_changing=True,
    )
    async def upload_file(args: UploadFileArgs, ctx: ToolContext) -> ToolOutput:
        files = await _sandbox_paths(ctx, args.paths)
        cdp = ctx.page()
        try:
            obj = await selector_object(cdp, args.selector, ctx.timeout)
            text = await _set_files(cdp, obj, files, args.selector)
        finally:
            await release_handles(cdp)
        return ToolOutput(content=text, summary=f"upload to {args.selector}"[:200])

    @reg.register(
        "drop_files",
        "Drop files from Browy's files folder on element [index], as if dragged in from the "
        'desktop: for drop zones ("drag files here") with no file input to use upload_index '
        "on. A zone inspect_page does not number is named by the text it shows (text=...). "
        "Drops nothing, and fails, if the element does not take files.",
        DropArgs,
        page_changing=True,
    )
    async def drop_files(args: DropArgs, ctx: ToolContext) -> ToolOutput:
        if (args.index is None) == (args.text is None):
            raise ToolError("give exactly one of index or text")
        files = await _sandbox_paths(ctx, args.paths)
        browser = index_browser(ctx)
        page = browser.page()
        if args.text is not None:
            ok, text = await page.drop_on_text(args.text, files)
            if not ok:
                raise ToolError(text, code=ErrorCode.INTERNAL)
            return ToolOutput(content=untrusted(text), summary=text[:200])
        index = int(args.index)  # type: ignore[arg-type]  # checked above: exactly one is given
        return action_output(browser, await page.drop_files(index, files, browser.token()))
