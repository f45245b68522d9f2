"""The ToolWorker core: schemas, policy, argument checking, approvals and the no-replay ledger."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from actors.tools.catalog import default_registry
from actors.tools.cdp import BrowserCallError
from actors.tools.ledger import AlreadySent, CallLedger
from actors.tools.registry import Registry
from actors.tools.tool_def import ApprovalRequestInfo, ToolArgs, ToolContext, ToolOutput, ToolPolicy
from messages.errors import ErrorCode


class CountArgs(ToolArgs):
    n: int
    flag: bool = False
    title: str | None = None


class Counter:
    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[CountArgs] = []
        self.error = error

    async def __call__(self, args: CountArgs, ctx: ToolContext) -> ToolOutput:
        self.calls.append(args)
        if self.error is not None:
            raise self.error
        return ToolOutput(content=f"n={args.n} flag={args.flag}", summary="counted")


def registry_with(
    name: str, run: Counter, *, page_changing: bool, host_code: bool = False
) -> Registry:
    reg = Registry()
    reg.register(name, "count", CountArgs, page_changing=page_changing, host_code=host_code)(run)
    return reg


def names(defs: list[dict[str, Any]]) -> set[str]:
    return {d["function"]["name"] for d in defs}


def test_schemas_are_openai_functions_without_titles() -> None:
    defs = registry_with("count", Counter(), page_changing=False).definitions(ToolPolicy())
    params = defs[0]["function"]["parameters"]
    assert defs[0]["type"] == "function"
    assert params["type"] == "object"
    assert "title" not in params
    assert all("title" not in p for p in params["properties"].values())
    assert "title" in params["properties"]  # a field called "title" is kept
    assert params["required"] == ["n"]


def test_disabled_tools_are_not_offered() -> None:
    reg = default_registry()
    offered = names(reg.definitions(ToolPolicy(disabled=frozenset({"navigate", "screenshot"}))))
    assert "navigate" not in offered
    assert "screenshot" not in offered
    assert "click_element" in offered


def test_host_tools_are_offered_only_when_enabled() -> None:
    reg = default_registry()
    assert "grep" not in names(reg.definitions(ToolPolicy()))
    assert "read_file" in names(reg.definitions(ToolPolicy()))  # always the sandboxed tool
    on = ToolPolicy(enabled_host_tools=frozenset({"grep"}))
    assert "grep" in names(reg.definitions(on))


async def test_a_disabled_tool_is_not_runnable() -> None:
    run = Counter()
    reg = registry_with("count", run, page_changing=False)
    ctx = ToolContext(policy=ToolPolicy(disabled=frozenset({"count"})))
    out = await reg.run("count", '{"n": 1}', ctx)
    assert (out.outcome, out.error_code) == ("error", ErrorCode.TOOL_DISABLED)
    assert run.calls == []


async def test_host_code_stays_off_unless_the_host_config_allows_it() -> None:
    run = Counter()
    reg = registry_with("bash", run, page_changing=False, host_code=True)
    # The v1 toggle names it, but the host's own config does not allow host code.
    v1_only = ToolPolicy(enabled_host_tools=frozenset({"bash"}), allow_host_code=False)
    assert names(reg.definitions(v1_only)) == set()
    out = await reg.run("bash", {"n": 1}, ToolContext(policy=v1_only))
    assert out.error_code is ErrorCode.TOOL_DISABLED
    assert run.calls == []
    allowed = ToolPolicy(enabled_host_tools=frozenset({"bash"}), allow_host_code=True)
    assert (await reg.run("bash", {"n": 1}, ToolContext(policy=allowed))).outcome == "ok"
    assert len(run.calls) == 1


async def test_numbers_and_booleans_sent_as_strings_are_accepted() -> None:
    run = Counter()
    reg = registry_with("count", run, page_changing=False)
    out = await reg.run("count", '{"n": "3", "flag": "true"}', ToolContext())
    assert out.outcome == "ok"
    assert (run.calls[0].n, run.calls[0].flag) == (3, True)


async def test_bad_arguments_give_an_error_naming_the_field() -> None:
    run = Counter()
    reg = registry_with("count", run, page_changing=False)
    out = await reg.run("count", '{"n": "three", "colour": 1}', ToolContext())
    assert out.outcome == "error"
    assert isinstance(out.content_for_model, str)
    assert "n:" in out.content_for_model
    assert "colour: unknown field" in out.content_for_model
    missing = await reg.run("count", "{}", ToolContext())
    assert "n: Field required" in str(missing.content_for_model)
    not_json = await reg.run("count", "{n: 1", ToolContext())
    assert "not valid JSON" in str(not_json.content_for_model)
    assert run.calls == []


async def test_an_unknown_tool_is_an_error_that_lists_the_tools() -> None:
    out = await registry_with("count", Counter(), page_changing=False).run(
        "nope", {}, ToolContext()
    )
    assert out.outcome == "error"
    assert "unknown tool 'nope'" in str(out.content_for_model)
    assert "count" in str(out.content_for_model)


async def test_approval_denied_stops_the_action() -> None:
    run = Counter()
    reg = registry_with("click", run, page_changing=True)
    asked: list[ApprovalRequestInfo] = []

    async def deny(info: ApprovalRequestInfo) -> bool:
        asked.append(info)
        return False

    ctx = ToolContext(policy=ToolPolicy(approval_mode="page-changing"), approve=deny)
    out = await reg.run("click", {"n": 1}, ctx)
    assert (out.outcome, out.error_code) == ("error", ErrorCode.APPROVAL_DENIED)
    assert run.calls == []
    assert asked[0].tool == "click"


async def test_reads_need_no_approval_in_page_changing_mode() -> None:
    run = Counter()
    reg = registry_with("read", run, page_changing=False)

    async def deny(info: ApprovalRequestInfo) -> bool:
        return False

    ctx = ToolContext(policy=ToolPolicy(approval_mode="page-changing"), approve=deny)
    assert (await reg.run("read", {"n": 1}, ctx)).outcome == "ok"


async def test_an_interrupted_page_changing_call_is_reported_unknown_and_not_retried() -> None:
    run = Counter(BrowserCallError(ErrorCode.REQUEST_TIMEOUT, "no answer", outcome="unknown"))
    reg = registry_with("click", run, page_changing=True)
    ctx = ToolContext()
    out = await reg.run("click", {"n": 1}, ctx, call_id="call-1")
    assert out.outcome == "unknown"
    assert len(run.calls) == 1  # no retry
    assert ctx.ledger.get("call-1").state == "unknown"  # type: ignore[union-attr]
    again = await reg.run("click", {"n": 1}, ctx, call_id="call-1")
    assert again.outcome == "unknown"
    assert len(run.calls) == 1  # never re-sent


async def test_a_read_is_retried_once_on_request_timeout() -> None:
    run = Counter(BrowserCallError(ErrorCode.REQUEST_TIMEOUT, "no answer"))
    reg = registry_with("read", run, page_changing=False)
    out = await reg.run("read", {"n": 1}, ToolContext())
    assert (out.outcome, out.error_code) == ("error", ErrorCode.REQUEST_TIMEOUT)
    assert len(run.calls) == 2


async def test_a_cancelled_page_changing_call_is_recorded_unknown() -> None:
    started = asyncio.Event()

    async def hang(args: CountArgs, ctx: ToolContext) -> ToolOutput:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    reg = Registry()
    reg.register("click", "hang", CountArgs, page_changing=True)(hang)
    ctx = ToolContext()
    task = asyncio.create_task(reg.run("click", {"n": 1}, ctx, call_id="c2"))
    await asyncio.wait_for(started.wait(), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [e.call_id for e in ctx.ledger.unknown()] == ["c2"]


def test_the_ledger_refuses_to_send_a_call_id_twice() -> None:
    ledger = CallLedger()
    ledger.sent("a", "navigate")
    ledger.done("a", "ok")
    with pytest.raises(AlreadySent):
        ledger.sent("a", "navigate")


def test_the_default_registry_offers_the_browser_and_file_tools() -> None:
    offered = names(default_registry().definitions(ToolPolicy()))
    expected = [
        "navigate",
        "new_tab",
        "close_tab",
        "list_tabs",
        "switch_tab",
        "wait_for",
        "scroll",
        "hover",
        "click_element",
        "fill_input",
        "select_option",
        "query_dom",
        "find_visible_text",
        "get_page_info",
        "extract_text",
        "get_page_html",
        "evaluate_js",
        "get_console_logs",
        "get_network_requests",
        "get_cookies",
        "set_cookie",
        "get_storage",
        "set_viewport",
        "screenshot",
        "pdf_export",
        "press_keys",
        "press_key",
        "save_file",
        "read_file",
        "list_files",
        "delete_file",
        "note_set",
        "note_get",
        "note_list",
        "note_delete",
    ]
    assert set(expected) <= offered
