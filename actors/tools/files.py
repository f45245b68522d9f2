"""Sandboxed file tools and notes, under ``BROWY_HOME/data/`` (architecture.md sections 6-7).

Files live in ``data/files/``; every path the model gives is relative to it. A path is refused
(``NOT_ALLOWED_URL`` is not the right word for it, so the code is ``INTERNAL`` with a clear message
for the model) when it is absolute, contains ``..``, contains a NUL, or resolves — symlinks
followed — to a place outside ``data/files/``. Writes are atomic (a temporary file, then
``os.replace``) and bounded by ``max_file_bytes`` from the config.

Notes are a small JSON object ``{key: value}`` in ``data/notes.json``, written atomically.
Everything written here is private: files 0600, folders 0700 (:mod:`actors.runtime.private_files`).

Tools: ``save_file read_file list_files delete_file note_set note_get note_list note_delete``,
and the host tools ``write_file grep glob`` (only when ``enabledHostTools`` names them; protocol.md
section 3b), confined to the same sandbox; ``grep`` matches in linear time
(:mod:`actors.tools.grep_engine`). ``save_file`` and ``delete_file`` and the note writes change the
host's disk, not the page: they are not page-changing, but they are not retried either.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import Field

from actors.runtime.private_files import private_dir
from actors.tools.grep_engine import compile_for_grep
from actors.tools.registry import Registry
from actors.tools.tool_def import ToolArgs, ToolContext, ToolError, ToolOutput
from messages.errors import ErrorCode

__all__ = ["DEFAULT_MAX_FILE_BYTES", "FileSandbox", "register_file_tools"]

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
_MAX_READ_CHARS = 50_000
_MAX_LIST = 500


def _atomic_write(path: Path, data: bytes) -> None:
    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)  # 0600, whatever the umask
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class FileSandbox:
    """``home/data/files`` and ``home/data/notes.json``. All methods are blocking; the tools call
    them through ``asyncio.to_thread``."""

    def __init__(self, home: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        self.data_dir = Path(home) / "data"
        self.root = self.data_dir / "files"
        self.notes_path = self.data_dir / "notes.json"
        self.max_file_bytes = max_file_bytes

    # --- paths ---------------------------------------------------------------------------------

    def resolve(self, rel: str, *, allow_root: bool = False) -> Path:
        """The real path of ``rel`` inside the sandbox; :class:`ToolError` if it would escape."""
        if "\x00" in rel:
            raise ToolError("path contains a NUL character")
        text = rel.replace("\\", "/").strip()
        pure = PurePosixPath(text)
        if pure.is_absolute() or re.match(r"^[A-Za-z]:", text) or text.startswith("~"):
            raise ToolError(f"path {rel!r} is absolute; give a path relative to the files folder")
        if ".." in pure.parts:
            raise ToolError(f"path {rel!r} contains '..'; it must stay inside the files folder")
        private_dir(self.root)
        root = self.root.resolve()
        target = (root / pure).resolve()  # follows symlinks: a link pointing out is caught here
        if target != root and root not in target.parents:
            raise ToolError(f"path {rel!r} leads outside the files folder")
        if target == root and not allow_root:
            raise ToolError("a file name is required")
        return target

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root.resolve()).as_posix()

    # --- files -----------------------------------------------------------------------------------

    def write(self, rel: str, content: str | bytes, *, append: bool = False) -> Path:
        data = content.encode("utf-8") if isinstance(content, str) else content
        path = self.resolve(rel)
        if path.is_dir():
            raise ToolError(f"{rel!r} is a folder")
        if append and path.exists():
            data = path.read_bytes() + data
        if len(data) > self.max_file_bytes:
            raise ToolError(f"file would be {len(data)} bytes; the limit is {self.max_file_bytes}")
        _atomic_write(path, data)
        return path

    def read(self, rel: str, *, offset: int = 0, max_chars: int = _MAX_READ_CHARS) -> str:
        path = self.resolve(rel)
        if not path.is_file():
            raise ToolError(f"no file {rel!r}")
        if path.stat().st_size > self.max_file_bytes:
            raise ToolError(f"{rel!r} is larger than the limit of {self.max_file_bytes} bytes")
        text = path.read_bytes().decode("utf-8", errors="replace")
        part = text[offset : offset + max_chars]
        rest = len(text) - offset - len(part)
        return part + (f"\n[… {rest} more characters; read on with offset]" if rest > 0 else "")

    def listing(self, rel: str = "", *, recursive: bool = False) -> list[str]:
        base = self.resolve(rel, allow_root=True) if rel else self.resolve(".", allow_root=True)
        if not base.is_dir():
            raise ToolError(f"no folder {rel!r}")
        items = base.rglob("*") if recursive else base.iterdir()
        out: list[str] = []
        for p in sorted(items):
            if p.name.startswith(".tmp-"):
                continue
            size = "" if p.is_dir() else f" ({p.stat().st_size} bytes)"
            out.append(self.relative(p) + ("/" if p.is_dir() else "") + size)
            if len(out) >= _MAX_LIST:
                break
        return out

    def delete(self, rel: str) -> None:
        path = self.resolve(rel)
        if path.is_dir():
            try:
                path.rmdir()
            except OSError:
                raise ToolError(f"folder {rel!r} is not empty") from None
        elif path.exists():
            path.unlink()
        else:
            raise ToolError(f"no file {rel!r}")

    def glob(self, pattern: str) -> list[str]:
        if pattern.startswith("/") or ".." in PurePosixPath(pattern).parts:
            raise ToolError("the pattern must be relative and must not contain '..'")
        private_dir(self.root)
        root = self.root.resolve()
        out = []
        for p in sorted(root.glob(pattern)):
            real = p.resolve()
            if real == root or root not in real.parents:
                continue  # a symlink pointing out is not listed
            out.append(self.relative(p))
            if len(out) >= _MAX_LIST:
                break
        return out

    def grep(self, pattern: str, glob: str = "**/*", *, max_hits: int = 200) -> list[str]:
        rx = compile_for_grep(pattern)
        hits: list[str] = []
        for rel in self.glob(glob):
            path = self.resolve(rel)
            if not path.is_file() or path.stat().st_size > self.max_file_bytes:
                continue
            text = path.read_bytes().decode("utf-8", errors="replace")
            for n, line in enumerate(text.splitlines(), 1):
                if rx.search(line):
                    hits.append(f"{rel}:{n}: {line[:300]}")
                    if len(hits) >= max_hits:
                        return hits
        return hits

    # --- notes -----------------------------------------------------------------------------------

    def notes(self) -> dict[str, str]:
        try:
            raw = json.loads(self.notes_path.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except ValueError as exc:
            raise ToolError(f"notes.json is not valid JSON: {exc}") from None
        return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}

    def save_notes(self, notes: dict[str, str]) -> None:
        data = json.dumps(notes, ensure_ascii=False, indent=1).encode("utf-8")
        if len(data) > self.max_file_bytes:
            raise ToolError("notes would exceed the file size limit")
        _atomic_write(self.notes_path, data)


# --- tools -------------------------------------------------------------------------------------


def _box(ctx: ToolContext) -> FileSandbox:
    if not isinstance(ctx.files, FileSandbox):
        raise ToolError("file tools are not available here", code=ErrorCode.INTERNAL)
    return ctx.files


class SaveFileArgs(ToolArgs):
    path: str = Field(description="file path relative to the files folder, e.g. 'notes/a.txt'")
    content: str = Field(description="text to write")
    append: bool = Field(default=False, description="append instead of replacing")


class ReadFileArgs(ToolArgs):
    path: str = Field(description="file path relative to the files folder")
    offset: int = Field(default=0, ge=0, description="character offset to start at")
    max_chars: int = Field(default=_MAX_READ_CHARS, ge=1, le=200_000)


class ListFilesArgs(ToolArgs):
    path: str = Field(default="", description="folder relative to the files folder ('' = top)")
    recursive: bool = False


class PathArgs(ToolArgs):
    path: str = Field(description="path relative to the files folder")


class NoteSetArgs(ToolArgs):
    key: str = Field(min_length=1, max_length=200)
    value: str


class NoteKeyArgs(ToolArgs):
    key: str = Field(min_length=1, max_length=200)


class NoArgs(ToolArgs):
    pass


class GlobArgs(ToolArgs):
    pattern: str = Field(description="glob relative to the files folder, e.g. '**/*.txt'")


class GrepArgs(ToolArgs):
    pattern: str = Field(
        description="regular expression (RE2: Python syntax without backreferences or lookaround)"
    )
    glob: str = Field(default="**/*", description="which files to search")


def register_file_tools(reg: Registry) -> None:
    """Add the file and note tools to ``reg``."""

    async def save_file(args: SaveFileArgs, ctx: ToolContext) -> ToolOutput:
        box = _box(ctx)
        path = await asyncio.to_thread(box.write, args.path, args.content, append=args.append)
        rel = box.relative(path)
        return ToolOutput(content=f"saved {rel} ({path.stat().st_size} bytes)", summary=rel)

    async def read_file(args: ReadFileArgs, ctx: ToolContext) -> ToolOutput:
        text = await asyncio.to_thread(
            _box(ctx).read, args.path, offset=args.offset, max_chars=args.max_chars
        )
        return ToolOutput(content=text, summary=f"read {args.path} ({len(text)} chars)")

    async def list_files(args: ListFilesArgs, ctx: ToolContext) -> ToolOutput:
        items = await asyncio.to_thread(_box(ctx).listing, args.path, recursive=args.recursive)
        return ToolOutput(content="\n".join(items) or "(no files)", summary=f"{len(items)} entries")

    async def delete_file(args: PathArgs, ctx: ToolContext) -> ToolOutput:
        await asyncio.to_thread(_box(ctx).delete, args.path)
        return ToolOutput(content=f"deleted {args.path}", summary=f"deleted {args.path}")

    async def note_set(args: NoteSetArgs, ctx: ToolContext) -> ToolOutput:
        box = _box(ctx)

        def update() -> None:
            notes = box.notes()
            notes[args.key] = args.value
            box.save_notes(notes)

        await asyncio.to_thread(update)
        return ToolOutput(content=f"note {args.key!r} saved", summary=f"note {args.key}")

    async def note_get(args: NoteKeyArgs, ctx: ToolContext) -> ToolOutput:
        notes = await asyncio.to_thread(_box(ctx).notes)
        if args.key not in notes:
            raise ToolError(f"no note {args.key!r}; existing: {', '.join(sorted(notes)) or '-'}")
        return ToolOutput(content=notes[args.key], summary=f"note {args.key}")

    async def note_list(args: NoArgs, ctx: ToolContext) -> ToolOutput:
        notes = await asyncio.to_thread(_box(ctx).notes)
        lines = [f"{k}: {v[:80]}" for k, v in sorted(notes.items())]
        return ToolOutput(
            content="\n".join(lines) or "(no notes)",
            summary=f"{len(notes)} notes",
            data={"keys": sorted(notes)},
        )

    async def note_delete(args: NoteKeyArgs, ctx: ToolContext) -> ToolOutput:
        box = _box(ctx)

        def remove() -> bool:
            notes = box.notes()
            found = notes.pop(args.key, None) is not None
            if found:
                box.save_notes(notes)
            return found

        if not await asyncio.to_thread(remove):
            raise ToolError(f"no note {args.key!r}")
        return ToolOutput(content=f"note {args.key!r} deleted", summary=f"deleted {args.key}")

    async def glob_tool(args: GlobArgs, ctx: ToolContext) -> ToolOutput:
        items = await asyncio.to_thread(_box(ctx).glob, args.pattern)
        return ToolOutput(content="\n".join(items) or "(no match)", summary=f"{len(items)} files")

    async def grep_tool(args: GrepArgs, ctx: ToolContext) -> ToolOutput:
        hits = await asyncio.to_thread(_box(ctx).grep, args.pattern, args.glob)
        return ToolOutput(content="\n".join(hits) or "(no match)", summary=f"{len(hits)} lines")

    no_retry = {"retry_on_timeout": False}
    tools: list[tuple[str, str, type[ToolArgs], Any, dict[str, Any]]] = [
        (
            "save_file",
            "Save text to a file in Browy's files folder.",
            SaveFileArgs,
            save_file,
            no_retry,
        ),
        ("read_file", "Read a text file from Browy's files folder.", ReadFileArgs, read_file, {}),
        ("list_files", "List files in Browy's files folder.", ListFilesArgs, list_files, {}),
        (
            "delete_file",
            "Delete a file (or empty folder) in Browy's files folder.",
            PathArgs,
            delete_file,
            no_retry,
        ),
        (
            "note_set",
            "Remember a note under a key (kept across chats).",
            NoteSetArgs,
            note_set,
            no_retry,
        ),
        ("note_get", "Read the note saved under a key.", NoteKeyArgs, note_get, {}),
        ("note_list", "List saved notes.", NoArgs, note_list, {}),
        ("note_delete", "Delete the note saved under a key.", NoteKeyArgs, note_delete, no_retry),
        (
            "write_file",
            "Host tool: write a text file in Browy's files folder.",
            SaveFileArgs,
            save_file,
            no_retry,
        ),
        (
            "glob",
            "Host tool: find files in Browy's files folder by glob pattern.",
            GlobArgs,
            glob_tool,
            {},
        ),
        (
            "grep",
            "Host tool: search Browy's files folder with a regular expression.",
            GrepArgs,
            grep_tool,
            {},
        ),
    ]
    for name, description, params, fn, extra in tools:
        reg.register(name, description, params, page_changing=False, **extra)(fn)
