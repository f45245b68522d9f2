"""Session registration and takeover rules (protocol.md section 3b), without I/O."""

from __future__ import annotations

from actors.agent.route_table import LinkFacts, RegisterOutcome, RouteTable


def link(link_id: int, *, install: str | None = None, origin: str = "o1", protocol: int = 2):  # type: ignore[no-untyped-def]
    return LinkFacts(link_id=link_id, origin=origin, protocol=protocol, install_id=install)


def test_a_session_is_registered_on_its_connection() -> None:
    table = RouteTable()
    result = table.register(link(1, install="i"), "sp-1", capabilities=("cdp.activeTab",))
    assert result.outcome is RegisterOutcome.REGISTERED
    entry = table.lookup("sp-1")
    assert entry is not None and entry.can_drive_tabs and entry.scope == "i"


def test_the_same_install_on_a_new_connection_takes_the_session_over() -> None:
    table = RouteTable()
    table.register(link(1, install="i"), "sp-1")
    result = table.register(link(2, install="i"), "sp-1")
    assert result.outcome is RegisterOutcome.MOVED
    assert result.previous_link == 1
    assert table.sessions_of(1) == []
    assert [e.session_id for e in table.sessions_of(2)] == ["sp-1"]


def test_a_different_install_is_refused_and_the_session_stays() -> None:
    table = RouteTable()
    table.register(link(1, install="i"), "sp-1")
    result = table.register(link(2, install="other"), "sp-1")
    assert result.outcome is RegisterOutcome.CONFLICT
    entry = table.lookup("sp-1")
    assert entry is not None and entry.link.link_id == 1


def test_v1_connections_of_the_same_origin_share_a_scope_and_may_take_over() -> None:
    table = RouteTable()
    table.register(link(1, protocol=1), "sp-1")
    result = table.register(link(2, protocol=1), "sp-1")
    assert result.outcome is RegisterOutcome.MOVED
    assert result.entry.scope == "default"


def test_v1_toggles_of_the_latest_session_start_apply_to_every_session_of_the_link() -> None:
    table = RouteTable()
    table.register(link(1, protocol=1), "sp-1", disabled_tools=("navigate",))
    table.register(link(1, protocol=1), "dt-2", disabled_tools=("screenshot",))
    for sid in ("sp-1", "dt-2"):
        entry = table.lookup(sid)
        assert entry is not None and entry.disabled_tools == frozenset({"screenshot"})


def test_v2_toggles_are_per_session() -> None:
    table = RouteTable()
    table.register(link(1), "sp-1", disabled_tools=("navigate",))
    table.register(link(1), "sp-2", disabled_tools=())
    e1, e2 = table.lookup("sp-1"), table.lookup("sp-2")
    assert e1 is not None and e1.disabled_tools == frozenset({"navigate"})
    assert e2 is not None and e2.disabled_tools == frozenset()


def test_unregister_from_a_link_that_lost_the_session_changes_nothing() -> None:
    table = RouteTable()
    table.register(link(1, install="i"), "sp-1")
    table.register(link(2, install="i"), "sp-1")
    assert table.unregister(1, "sp-1") is None
    assert table.lookup("sp-1") is not None


def test_dropping_a_link_removes_only_its_sessions() -> None:
    table = RouteTable()
    table.register(link(1, install="i"), "sp-1")
    table.register(link(2, install="j"), "sp-2")
    assert [e.session_id for e in table.drop_link(1)] == ["sp-1"]
    assert table.lookup("sp-1") is None
    assert table.lookup("sp-2") is not None
