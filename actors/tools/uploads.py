"""Files from the sandbox into the page: ``upload_index`` and ``upload_file``.

Uploads take paths in the files sandbox only (:class:`actors.tools.files.FileSandbox.resolve`
refuses absolute paths, ``..`` and symlinks that lead out).
"""

from __future__ import annotations

import asyncio
import json

from pydantic import Field

from actors.tools.cdp import CdpSession
from actors.tools.files import FileSandbox
from actors.tools.handles import GROUP, element_object, index_browser, release_handles
from actors.tools.registry import Registry
from actors.tools.tool_def import ToolArgs, ToolContext, ToolError, ToolOutput

__all__ = ["UploadFileArgs", "UploadIndexArgs", "register_upload_tools"]


class UploadIndexArgs(ToolArgs):
    index: int = Field(ge=0, description="the element number from inspect_page")
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
    await cdp.send(
        "DOM.setFileInputFiles",
        {"files": files, "backendNodeId": node["backendNodeId"]},
        page_changing=True,
    )
    return f"set {len(files)} file(s) on {label}"


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
    """Add ``upload_index`` and ``upload_file`` to ``reg``."""

    @reg.register(
        "upload_index",
        "Put files from Browy's files folder into the file input [index].",
        UploadIndexArgs,
        page_changing=True,
    )
    async def upload_index(args: UploadIndexArgs, ctx: ToolContext) -> ToolOutput:
        files = await _sandbox_paths(ctx, args.paths)
        browser = index_browser(ctx)
        cdp = browser.page().cdp
        try:
            obj = await element_object(cdp, args.index, browser.token())
            text = await _set_files(cdp, obj, files, f"[{args.index}]")
        finally:
            await release_handles(cdp)
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
            res = await cdp.send(
                "Runtime.evaluate",
                {
                    "expression": f"document.querySelector({json.dumps(args.selector)})",
                    "objectGroup": GROUP,
                },
                timeout=ctx.timeout,
            )
            obj = res.get("result", {}).get("objectId")
            if res.get("exceptionDetails") or not obj:
                raise ToolError(f"no element matches {args.selector!r}")
            text = await _set_files(cdp, str(obj), files, args.selector)
        finally:
            await release_handles(cdp)
        return ToolOutput(content=text, summary=f"upload to {args.selector}"[:200])
