"""Talking to the user, and skills: ``ask_user`` (v2 ``user.ask`` / ``user.answer``) and
``get_skill`` (step-by-step guides from the package's ``skills/`` and ``BROWY_HOME/skills``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from actors.tools.registry import Registry
from actors.tools.tool_def import ToolArgs, ToolContext, ToolError, ToolOutput
from messages.errors import ErrorCode

__all__ = ["SKILLS_DIR", "V2_ONLY_TOOLS", "AskFn", "AskUserArgs", "register_user_tools"]

SKILLS_DIR = Path(__file__).parent / "skills"


class AskOptionArgs(ToolArgs):
    label: str
    value: str


class AskUserArgs(ToolArgs):
    kind: Literal["input", "confirm", "choose"] = Field(
        "input", description="input: free text; confirm: yes/no; choose: one of the options"
    )
    prompt: str = Field(..., description="the question, in plain words")
    options: list[AskOptionArgs] | None = Field(None, description="for kind=choose")
    default_value: str | None = None


class SkillArgs(ToolArgs):
    name: str | None = Field(None, description="the skill to load; omit to list the skills")


#: Asks the user through the panel; returns (value, cancelled). Set per call by the runner.
AskFn = Callable[[AskUserArgs], Awaitable[tuple[Any, bool]]]

V2_ONLY_TOOLS = frozenset({"ask_user"})


def register_user_tools(registry: Registry, skills_dirs: Callable[[], list[Path]]) -> None:
    """``ask_user`` (v2: ``user.ask`` / ``user.answer``) and ``get_skill``."""

    @registry.register(
        "ask_user",
        "Ask the user a question in the panel and wait for the answer (free text, yes/no, or a "
        "choice among options). Use it when the task is ambiguous or needs their decision.",
        AskUserArgs,
        page_changing=False,
    )
    async def ask_user(args: AskUserArgs, ctx: ToolContext) -> ToolOutput:
        ask = ctx.state.get("ask_user")
        if ask is None:
            raise ToolError("this panel cannot answer questions", code=ErrorCode.NO_CAPABILITY)
        value, cancelled = await ask(args)
        if cancelled:
            return ToolOutput(content="The user dismissed the question.", summary="dismissed")
        return ToolOutput(content=f"The user answered: {value!r}", summary=str(value)[:200])

    @registry.register(
        "get_skill",
        "Load a step-by-step guide for a common multi-step task (omit name to list them).",
        SkillArgs,
        page_changing=False,
    )
    async def get_skill(args: SkillArgs, ctx: ToolContext) -> ToolOutput:
        found: dict[str, Path] = {}
        for directory in skills_dirs():
            if directory.is_dir():
                for path in sorted(directory.glob("*.md")):
                    found.setdefault(path.stem, path)
        if args.name is None:
            listing = "\n".join(
                f"- {name}: {_first_line(path)}" for name, path in sorted(found.items())
            )
            return ToolOutput(
                content=listing or "No skills installed.", summary=f"{len(found)} skills"
            )
        chosen = found.get(args.name)
        if chosen is None:
            raise ToolError(
                f"no skill named {args.name!r}; known: {', '.join(sorted(found)) or 'none'}",
                code=ErrorCode.INTERNAL,
            )
        return ToolOutput(content=chosen.read_text("utf-8")[:20_000], summary=f"skill {args.name}")


def _first_line(path: Path) -> str:
    with path.open(encoding="utf-8") as fh:
        return fh.readline().strip().lstrip("# ")[:120]
