"""Chat turns end to end inside the daemon: v1 and v2 peers on the real link, the scripted model
server over real HTTP through the real openai client (protocol.md sections 2-4, 3b, 6)."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from actors.store.chat_store import ChatStore, sessions_dir
from tests.helpers.daemon_harness import BROWSER_REQUESTS, DaemonHarness, FakeTab


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "h"


def turn_types(seen: list[dict[str, Any]]) -> list[str]:
    return [m["type"] for m in seen]


async def test_a_v1_turn_streams_deltas_and_ends_with_done_then_idle(home: Path) -> None:
    async with DaemonHarness(home, [{"text": ["Hello", " there", "!"]}]) as h:
        peer = await h.peer()
        await peer.hello(1)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "hi"})
        end, status, seen = await peer.turn_end("sp-1")
        assert end["type"] == "chat.done"
        assert end["text"] == "Hello there!"
        assert status["event"] == "status.idle"
        deltas = [m["text"] for m in seen if m["type"] == "chat.delta"]
        assert "".join(deltas) == "Hello there!"
        assert {"type": "event.activity", "sessionId": "sp-1", "event": "status.thinking"} in seen
        # v2-only messages never reach a v1 panel.
        assert not {"usage", "chat.queued", "control.release"} & set(turn_types(peer.log))
        # The model got the user's words.
        assert h.model.requests[0]["messages"][-1]["content"].startswith("hi\n\n[No browser tab")


async def test_the_initial_push_says_which_model_and_that_the_provider_is_reachable(
    home: Path,
) -> None:
    async with DaemonHarness(home, []) as h:
        peer = await h.peer()
        await peer.hello(1)
        await peer.send({"type": "session.start", "sessionId": "sp-1", "capabilities": []})
        ready, _ = await peer.until("session.ready")
        assert ready["model"] == "scripted-model"
        sdk, _ = await peer.until("sdk.ready")
        assert sdk["ok"] is True
        current, _ = await peer.until("models.current")
        assert current["id"] == "scripted-model"


async def test_a_host_side_tool_call_runs_and_its_result_goes_back_to_the_model(
    home: Path,
) -> None:
    script = [
        {"tool_calls": [{"name": "note_set", "arguments": {"key": "k", "value": "v1"}}]},
        {"text": "Saved."},
    ]
    async with DaemonHarness(home, script) as h:
        peer = await h.peer()
        await peer.hello(2)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "remember k"})
        end, _status, seen = await peer.turn_end("sp-1")
        assert end["type"] == "chat.done", end
        call = next(m for m in seen if m["type"] == "chat.tool_call")
        result = next(m for m in seen if m["type"] == "chat.tool_result")
        assert call["tool"] == "note_set"
        assert result["callId"] == call["callId"]
        assert result["ok"] is True and result["outcome"] == "ok"
        second = h.model.requests[1]["messages"]
        assert second[-1]["role"] == "tool"
        assert second[-1]["tool_call_id"] == call["callId"]
        assert "control.release" in turn_types(peer.log)


async def test_cancel_mid_stream_ends_with_the_partial_text_within_a_second(home: Path) -> None:
    script = [
        {
            "text": ["one ", "two ", "three ", "four"],
            "fault": {"kind": "delay", "between_chunks_s": 5},
        }
    ]
    async with DaemonHarness(home, script) as h:
        peer = await h.peer()
        await peer.hello(1)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "count"})
        await peer.until("chat.delta", session_id="sp-1")
        await peer.send({"type": "chat.cancel", "sessionId": "sp-1"})
        end, status, _ = await peer.turn_end("sp-1", timeout=1.0)
        assert end["type"] == "chat.done"
        assert end["text"].startswith("one")
        assert status["event"] == "status.idle"
        async with asyncio.timeout(1.0):
            await h.model.client_disconnected.wait()  # the model stream was closed


async def test_a_second_send_on_a_busy_v1_session_is_refused_as_aborted(home: Path) -> None:
    script = [{"text": ["slow ", "answer"], "fault": {"kind": "delay", "first_chunk_s": 1}}]
    async with DaemonHarness(home, script) as h:
        peer = await h.peer()
        await peer.hello(1)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "a"})
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "b"})
        end, status, _ = await peer.turn_end("sp-1")
        assert (end["type"], end.get("code"), status["event"]) == (
            "chat.error",
            "aborted",
            "status.error",
        )
        end, status, _ = await peer.turn_end("sp-1")
        assert end["type"] == "chat.done" and status["event"] == "status.idle"


async def test_three_panels_with_one_slot_are_served_in_order_with_queue_positions(
    home: Path,
) -> None:
    script = [
        {"session": "[A]", "text": "answer A", "fault": {"kind": "delay", "first_chunk_s": 0.3}},
        {"session": "[B]", "text": "answer B"},
        {"session": "[C]", "text": "answer C"},
    ]
    async with DaemonHarness(home, script, config="turn_concurrency = 1\n") as h:
        peer = await h.peer()
        await peer.hello(2)
        for sid in ("sp-a", "sp-b", "sp-c"):
            await peer.start(sid)
        for sid, tag in (("sp-a", "[A]"), ("sp-b", "[B]"), ("sp-c", "[C]")):
            await peer.send({"type": "chat.send", "sessionId": sid, "text": f"{tag} go"})
        done_order = []
        async with asyncio.timeout(15):
            while len(done_order) < 3:
                msg = await peer.recv()
                if msg["type"] == "chat.done":
                    done_order.append(msg["sessionId"])
        assert done_order == ["sp-a", "sp-b", "sp-c"]
        queued = [(m["sessionId"], m["position"]) for m in peer.log if m["type"] == "chat.queued"]
        assert ("sp-b", 1) in queued and ("sp-c", 2) in queued
        assert ("sp-c", 1) in queued  # moved up when A finished


async def test_a_model_that_refuses_the_key_ends_the_turn_with_auth(home: Path) -> None:
    script = {"api_key": "sk-other", "steps": [{"text": "never"}]}
    async with DaemonHarness(home, script) as h:
        peer = await h.peer()
        await peer.hello(1)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "hi"})
        end, status, _ = await peer.turn_end("sp-1")
        assert end["type"] == "chat.error"
        assert end["code"] == "auth"
        assert status["event"] == "status.error"
        assert len(h.model.requests) == 1  # a 401 is never retried


async def test_a_chat_send_for_an_unregistered_session_gets_an_error_and_status(
    home: Path,
) -> None:
    async with DaemonHarness(home, []) as h:
        peer = await h.peer()
        await peer.hello(1)
        await peer.send({"type": "chat.send", "sessionId": "sp-x", "text": "hi"})
        end, status, _ = await peer.turn_end("sp-x")
        assert (end["type"], end["code"], status["event"]) == (
            "chat.error",
            "internal",
            "status.error",
        )


async def test_a_resent_turn_id_gets_the_stored_outcome_even_after_a_daemon_restart(
    home: Path,
) -> None:
    async with DaemonHarness(home, [{"text": "only once"}]) as h:
        peer = await h.peer()
        await peer.hello(2)
        await peer.start("sp-1")
        send = {"type": "chat.send", "sessionId": "sp-1", "text": "hi", "turnId": "turn-1"}
        await peer.send(send)
        end, _, _ = await peer.turn_end("sp-1")
        assert end["text"] == "only once"
        await h.stop_daemon()
        await h.start_daemon()
        peer2 = await h.peer()
        await peer2.hello(2)
        await peer2.start("sp-1")
        await peer2.send(send)
        end, status, _ = await peer2.turn_end("sp-1")
        assert (end["type"], end["text"], status["event"]) == (
            "chat.done",
            "only once",
            "status.idle",
        )
        assert len(h.model.requests) == 1  # no second turn


async def test_chat_list_and_history_show_the_finished_turn(home: Path) -> None:
    async with DaemonHarness(home, [{"text": "An answer."}]) as h:
        peer = await h.peer()
        await peer.hello(1)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "A question"})
        await peer.turn_end("sp-1")
        await peer.send({"type": "chat.list"})
        listing, _ = await peer.until("chat.list.result")
        assert [c["id"] for c in listing["chats"]] == ["sp-1"]
        await peer.send({"type": "chat.history", "id": "sp-1"})
        history, _ = await peer.until("chat.history.result")
        rows = [(r["role"], r.get("text")) for r in history["messages"]]
        assert rows == [("user", "A question"), ("assistant", "An answer.")]


async def test_a_turn_cut_by_a_link_drop_gets_its_definite_end_when_the_session_returns(
    home: Path,
) -> None:
    script = [{"text": ["x"], "fault": {"kind": "hang", "after_chunks": 2}}]
    async with DaemonHarness(home, script) as h:
        peer = await h.peer()
        await peer.hello(1)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "hang"})
        await peer.until("chat.delta", session_id="sp-1")
        await peer.close()  # the link drops mid-turn: the turn ends with CONNECTION_LOST
        async with asyncio.timeout(5):
            await h.model.client_disconnected.wait()
        peer2 = await h.peer()
        await peer2.hello(1)
        await peer2.send({"type": "session.start", "sessionId": "sp-1", "capabilities": []})
        end, status, _ = await peer2.turn_end("sp-1")
        assert (end["type"], status["event"]) == ("chat.error", "status.error")


APPROVAL_SCRIPT = [
    {"tool_calls": [{"name": "navigate", "arguments": {"url": "https://example.test/next"}}]},
    {"text": "Finished."},
]


@pytest.mark.parametrize("decision", ["deny", "allow"])
async def test_a_page_changing_tool_waits_for_the_users_approval(home: Path, decision: str) -> None:
    async with DaemonHarness(
        home, APPROVAL_SCRIPT, config='[tools]\napproval_mode = "page-changing"\n'
    ) as h:
        peer = await h.peer(browser=FakeTab())
        await peer.hello(2)
        await peer.start("sp-1", tabs=True)
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "go on"})
        request, _ = await peer.until("approval.request", session_id="sp-1")
        assert request["tool"] == "navigate"
        assert request["args"] == {"url": "https://example.test/next"}
        navigations = [c for c in peer.browser_calls if c.get("method") == "Page.navigate"]
        assert navigations == []  # nothing runs before the answer
        await peer.send(
            {"type": "approval.response", "sessionId": "sp-1",
             "approvalId": request["approvalId"], "decision": decision}
        )  # fmt: skip
        end, _status, seen = await peer.turn_end("sp-1")
        assert end["type"] == "chat.done"
        result = next(m for m in seen if m["type"] == "chat.tool_result")
        navigations = [c for c in peer.browser_calls if c.get("method") == "Page.navigate"]
        if decision == "deny":
            assert result["ok"] is False
            assert navigations == []
            assert "APPROVAL_DENIED" in h.model.requests[1]["messages"][-1]["content"]
        else:
            assert len(navigations) == 1, (result, peer.browser_calls)  # sent once, never replayed


async def test_ask_user_puts_the_question_in_the_panel_and_returns_the_answer(home: Path) -> None:
    options = [{"label": "Small", "value": "s"}, {"label": "Large", "value": "l"}]
    ask = {"kind": "choose", "prompt": "Size?", "options": options}
    script = [
        {"tool_calls": [{"name": "ask_user", "arguments": ask}]},
        {"text": "Large it is."},
    ]
    async with DaemonHarness(home, script) as h:
        peer = await h.peer()
        await peer.hello(2)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "buy a shirt"})
        ask, _ = await peer.until("user.ask", session_id="sp-1")
        assert ask["kind"] == "choose"
        assert [o["value"] for o in ask["options"]] == ["s", "l"]
        await peer.send(
            {"type": "user.answer", "sessionId": "sp-1", "askId": ask["askId"], "value": "l"}
        )
        end, _, _ = await peer.turn_end("sp-1")
        assert end["text"] == "Large it is."
        assert "'l'" in h.model.requests[1]["messages"][-1]["content"]


async def test_ask_user_is_not_offered_to_a_v1_panel(home: Path) -> None:
    async with DaemonHarness(home, [{"text": "ok"}]) as h:
        peer = await h.peer()
        await peer.hello(1)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "hi"})
        await peer.turn_end("sp-1")
        offered = {t["function"]["name"] for t in h.model.requests[0]["tools"]}
        assert "ask_user" not in offered
        assert "note_set" in offered
        assert "click_index" not in offered  # this session may not drive tabs


NAV_SCRIPT = [
    {"tool_calls": [{"name": "navigate", "arguments": {"url": "https://example.test/from-cli"}}]},
    {"text": "Opened it."},
]


async def test_a_local_client_drives_the_connected_browser_when_the_config_allows(
    home: Path,
) -> None:
    config = '[tools]\napproval_mode = "never"\n'
    async with DaemonHarness(home, NAV_SCRIPT, config="allow_local_clients = true\n" + config) as h:
        tab = FakeTab()
        browser = await h.peer(browser=tab)
        await browser.hello(1)
        cli = await h.peer(role="cli")
        await cli.hello(2, install_id="cli")
        await cli.send(
            {"type": "session.start", "sessionId": "cli-1", "capabilities": ["cdp.activeTab"]}
        )
        ready, _ = await cli.until("session.ready")
        assert ready["capabilities"] == ["cdp.activeTab"]
        await cli.send({"type": "chat.send", "sessionId": "cli-1", "text": "open it"})
        end, _, seen = await cli.turn_end("cli-1")
        assert end["type"] == "chat.done"
        assert tab.url == "https://example.test/from-cli"  # the browser did it
        assert any(m["type"] == "chat.tool_result" and m["ok"] for m in seen)
        # The browser connection got the browser commands, but none of the CLI's chat output.
        chat_output = [
            m for m in browser.log
            if m.get("sessionId") == "cli-1" and m["type"] not in BROWSER_REQUESTS
        ]  # fmt: skip
        assert chat_output == []


async def test_a_local_client_may_not_drive_the_browser_by_default(home: Path) -> None:
    # The trust boundary (architecture.md section 7): a same-user process may open a cli (or
    # mcp) link, but without [daemon] allow_local_clients it gets no browser access at all.
    async with DaemonHarness(home, NAV_SCRIPT) as h:
        tab = FakeTab()
        browser = await h.peer(browser=tab)
        await browser.hello(1)
        await browser.start("sp-1", tabs=True)
        for role in ("cli", "mcp"):
            client = await h.peer(role=role)
            await client.hello(2, install_id=role)
            sid = f"{role}-1"
            await client.send(
                {"type": "session.start", "sessionId": sid, "capabilities": ["cdp.activeTab"]}
            )
            ready, _ = await client.until("session.ready")
            assert ready["capabilities"] == []
            await client.send({"type": "chat.send", "sessionId": sid, "text": "open it"})
            _, _, seen = await client.turn_end(sid)
            results = [m for m in seen if m["type"] == "chat.tool_result"]
            assert results and not any(m["ok"] for m in results)
            if role == "cli":
                h.model.extend(NAV_SCRIPT)  # the same turn again, for the mcp client
        offered = {t["function"]["name"] for t in h.model.requests[0]["tools"]}
        assert "navigate" not in offered and "inspect_page" not in offered
        assert browser.browser_calls == []  # not one cdp.send or tab.* reached the browser
        assert tab.url == "https://example.test/"


async def test_the_options_page_reads_and_saves_settings_all_or_nothing(home: Path) -> None:
    async with DaemonHarness(home, [{"text": "ok"}]) as h:
        peer = await h.peer()
        await peer.hello(2)
        await peer.send({"type": "config.get", "sessionId": "opts-1"})
        result, _ = await peer.until("config.result")
        assert result["values"]["model.model"] == "scripted-model"
        assert result["values"]["model.api_key"] == ""  # write-only: never sent back
        assert "tools" in result["schema"]["properties"]
        await peer.send(
            {"type": "config.set", "values": {"tools.approval_mode": "always",
                                              "daemon.turn_concurrency": 0}}
        )  # fmt: skip
        error, _ = await peer.until("error")
        assert error["code"] == "INVALID_MESSAGE"
        assert "turn_concurrency" in error["message"]
        assert "approval_mode" not in (home / "config.toml").read_text()  # nothing written
        await peer.send({"type": "config.set", "values": {"tools.allow_host_code": True}})
        error, _ = await peer.until("error")
        assert "terminal" in error["message"]  # host code is never switched on from a page
        await peer.send({"type": "config.set", "values": {"tools.approval_mode": "always"}})
        result, _ = await peer.until("config.result")
        assert result["values"]["tools.approval_mode"] == "always"
        assert h.server is not None
        assert h.server.agent.config.tools.approval_mode == "always"  # applied to new turns


async def test_doctor_runs_from_the_options_page(home: Path) -> None:
    async with DaemonHarness(home, []) as h:
        peer = await h.peer()
        await peer.hello(2)
        await peer.send({"type": "doctor.run"})
        result, _ = await peer.until("doctor.result", timeout=20)
        names = {c["name"] for c in result["checks"]}
        assert "config" in names
        assert all(isinstance(c["ok"], bool) for c in result["checks"])


async def test_a_scheduler_that_keeps_crashing_takes_the_daemon_down_instead_of_hanging(
    home: Path,
) -> None:
    async with DaemonHarness(home, []) as h:
        assert h.server is not None
        for _ in range(6):  # one more than the intensity allows (5 in 10 s)
            ref = h.server.actor_refs()["turn-scheduler"]
            await ref.stop()
            if _ < 5:
                agent = h.server.tree.agent_sup
                assert agent is not None
                await agent.wait_child("turn-scheduler", after=ref, timeout=5)
        assert h._task is not None
        async with asyncio.timeout(10):
            assert await asyncio.shield(h._task) == 1  # the daemon exits: relays start anew


async def test_a_reopened_panel_resumes_its_conversation_after_a_daemon_restart(
    home: Path,
) -> None:
    script = [{"text": "Your number is 42."}, {"text": "It was 42."}]
    async with DaemonHarness(home, script) as h:
        peer = await h.peer()
        await peer.hello(1)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "pick a number"})
        await peer.turn_end("sp-1")
        await h.stop_daemon()
        await h.start_daemon()
        peer2 = await h.peer()
        await peer2.hello(1)
        await peer2.start("sp-1")  # the same session id: the same chat
        await peer2.send({"type": "chat.send", "sessionId": "sp-1", "text": "which one?"})
        end, _, _ = await peer2.turn_end("sp-1")
        assert end["text"] == "It was 42."
        sent = h.model.requests[1]["messages"]
        said = [(m["role"], m.get("content")) for m in sent if m["role"] != "system"]
        assert ("assistant", "Your number is 42.") in said
        assert said[-1][0] == "user"
        assert said[-1][1].startswith("which one?")


async def test_old_chats_beyond_the_retention_limit_are_removed_at_start(home: Path) -> None:
    script = [{"text": "a"}, {"text": "b"}, {"text": "c"}]
    async with DaemonHarness(home, script, config="[retention]\nmax_chats = 2\n") as h:
        peer = await h.peer()
        await peer.hello(1)
        for sid in ("sp-1", "sp-2", "sp-3"):
            await peer.start(sid)
            await peer.send({"type": "chat.send", "sessionId": sid, "text": "hi"})
            await peer.turn_end(sid)
        await h.stop_daemon()
        await h.start_daemon()
        peer2 = await h.peer()
        await peer2.hello(1)
        await peer2.send({"type": "chat.list"})
        listing, _ = await peer2.until("chat.list.result")
        assert [c["id"] for c in listing["chats"]] == ["sp-3", "sp-2"]


async def test_text_typed_into_a_secret_field_is_never_echoed_to_the_panel_or_the_journal(
    home: Path,
) -> None:
    args = {"selector": "input[name=password]", "value": "hunter2-secret"}
    script = [{"tool_calls": [{"name": "fill_input", "arguments": args}]}, {"text": "Done."}]
    async with DaemonHarness(home, script, config='[tools]\napproval_mode = "never"\n') as h:
        peer = await h.peer(browser=FakeTab())
        await peer.hello(2)
        await peer.start("sp-1", tabs=True)
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "log me in"})
        await peer.turn_end("sp-1")
        call = next(m for m in peer.log if m["type"] == "chat.tool_call")
        assert call["args"]["value"] == "••••"
        assert "hunter2-secret" not in str(peer.log)
        journals = list((home / "sessions").rglob("*.journal"))
        assert journals
        assert all(b"hunter2-secret" not in j.read_bytes() for j in journals)
        # The live call reached the page; later model context only shows the mask.
        assert "hunter2-secret" not in str(h.model.requests[1]["messages"])


def test_secret_fields_are_found_in_a_snapshot() -> None:
    from actors.tools.pinned_tab import _secret_lines

    text = (
        '# page "Login" https://x/\n'
        '[1] textbox "Email"\n'
        '[2] password "Password" required\n'
        '*[3] textbox "Card number" secret\n'
        '[4] button "Sign in"\n'
    )
    assert _secret_lines(text) == {2, 3}


@pytest.mark.parametrize("decision", ["allow", "deny"])
async def test_a_local_client_taking_a_tab_asks_the_browsers_panel_first(
    home: Path, decision: str
) -> None:
    config = 'allow_local_clients = true\n[tools]\napproval_mode = "never"\n'
    async with DaemonHarness(home, NAV_SCRIPT, config=config) as h:
        tab = FakeTab()
        browser = await h.peer(browser=tab)
        await browser.hello(2)
        await browser.start("sp-panel")  # the user's side panel on that browser
        cli = await h.peer(role="cli")
        await cli.hello(2, install_id="cli")
        await cli.start("cli-1", tabs=True)
        await cli.send({"type": "chat.send", "sessionId": "cli-1", "text": "open it"})
        ask, _ = await browser.until("approval.request", session_id="sp-panel")
        assert ask["tool"] == "take_control"
        assert ask["args"] == {"client": "cli", "tabId": 7}
        await browser.send(
            {"type": "approval.response", "sessionId": "sp-panel",
             "approvalId": ask["approvalId"], "decision": decision}
        )  # fmt: skip
        end, _, _ = await cli.turn_end("cli-1")
        if decision == "deny":
            assert (end["type"], end["code"]) == ("chat.error", "APPROVAL_DENIED")
            assert tab.url == "https://example.test/"  # nothing was done
        else:
            assert end["type"] == "chat.done"
            assert tab.url == "https://example.test/from-cli"


async def test_a_turn_with_tool_calls_runs_against_an_anthropic_messages_api(home: Path) -> None:
    script = [
        {"tool_calls": [{"name": "note_set", "arguments": {"key": "k", "value": "v"}}]},
        {"text": ["Saved ", "it."]},
    ]
    async with DaemonHarness(home, script, provider="anthropic") as h:
        peer = await h.peer()
        await peer.hello(2)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "remember k"})
        end, _, seen = await peer.turn_end("sp-1")
        assert end["type"] == "chat.done", end
        assert end["text"] == "Saved it."
        assert any(m["type"] == "chat.tool_result" and m["ok"] for m in seen)
        second = h.model.requests[1]
        assert "system" in second  # the Messages API shape, not chat completions
        blocks = second["messages"][-1]["content"]
        assert blocks[0]["type"] == "tool_result"


async def test_an_end_that_never_reached_its_panel_survives_a_daemon_restart(home: Path) -> None:
    script = [{"text": ["x"], "fault": {"kind": "hang", "after_chunks": 2}}, {"text": "next"}]
    async with DaemonHarness(home, script) as h:
        peer = await h.peer()
        await peer.hello(1)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "hang"})
        await peer.until("chat.delta", session_id="sp-1")
        await peer.close()  # the relay died with the port: the end finds no panel
        async with asyncio.timeout(5):
            await h.model.client_disconnected.wait()
        assert h.server is not None
        async with asyncio.timeout(5):
            while not h.server.agent.ends.undelivered:
                await asyncio.sleep(0.01)
        await h.stop_daemon()  # the daemon goes too, before the panel is back
        await h.start_daemon()
        peer2 = await h.peer()
        await peer2.hello(1)
        await peer2.send({"type": "session.start", "sessionId": "sp-1", "capabilities": []})
        end, status, _ = await peer2.turn_end("sp-1")
        assert (end["type"], status["event"]) == ("chat.error", "status.error")
        # Delivered once: a later registration gets nothing more, and the next turn works.
        peer3 = await h.peer()
        await peer3.hello(1)
        await peer3.start("sp-1")
        await peer3.send({"type": "chat.send", "sessionId": "sp-1", "text": "again"})
        end, _, seen = await peer3.turn_end("sp-1")
        assert end["text"] == "next"
        assert not [m for m in seen if m["type"] == "chat.error"]


async def test_a_turn_stopped_while_its_end_is_journaled_still_sends_exactly_one_end(
    home: Path,
) -> None:
    # Found by the one-hour soak: the scheduler crashed (and cancelled its running turns) while a
    # turn that had already finished was fsyncing its end, and the panel never got that end.
    entered, gate = threading.Event(), threading.Event()

    def slow_fsync(fd: int) -> None:
        entered.set()
        gate.wait(5)
        os.fsync(fd)

    store = ChatStore(sessions_dir(home), fsync_fn=slow_fsync)
    async with DaemonHarness(home, [{"text": "All done."}], store=store) as h:
        assert h.server is not None
        peer = await h.peer()
        await peer.hello(2)
        await peer.start("sp-1")
        await peer.send({"type": "chat.send", "sessionId": "sp-1", "text": "go", "turnId": "t-1"})
        assert await asyncio.to_thread(entered.wait, 5)  # the turn is journaling its end
        await h.server.actor_refs()["turn-scheduler"].stop()  # it cancels its turns
        gate.set()
        end, status, _ = await peer.turn_end("sp-1", timeout=5.0)
        assert (end["type"], end.get("turnId"), end.get("text")) == (
            "chat.done",
            "t-1",
            "All done.",
        )
        assert status["event"] == "status.idle"
        with pytest.raises(TimeoutError):  # and no second end
            await peer.until("chat.error", session_id="sp-1", timeout=0.5)
