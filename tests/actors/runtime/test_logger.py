"""The Logger: rotation with one old copy, whole lines, redacted, never stdout (the redaction
rules themselves: test_redaction.py)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from actors.runtime.logger import Flush, Logger, WriteLines, install_logging
from actors.runtime.thread_actor import start_thread_actor


def write_through(path: Path, texts: list[str], **kwargs: object) -> None:
    handle = start_thread_actor(Logger(path, **kwargs), name="logger")  # type: ignore[arg-type]
    for text in texts:
        handle.post(WriteLines(text=text))
    handle.post(Flush())
    assert handle.stop_and_join(2.0, drain=True)


def test_rotation_at_the_size_boundary_keeps_exactly_one_old_file(tmp_path: Path) -> None:
    path = tmp_path / "host.log"
    line = "x" * 9  # 10 bytes with the newline
    write_through(path, [line] * 10, max_bytes=100)
    assert path.stat().st_size == 100  # exactly at the limit: no rotation yet
    assert not (tmp_path / "host.log.1").exists()
    write_through(path, [line], max_bytes=100)  # one more line would pass the limit
    assert (tmp_path / "host.log.1").stat().st_size == 100
    assert path.read_text() == line + "\n"
    write_through(path, [line] * 20, max_bytes=100)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["host.log", "host.log.1"]


def test_an_appending_logger_never_rotates(tmp_path: Path) -> None:
    path = tmp_path / "relay.log"
    write_through(path, ["y" * 50] * 5, max_bytes=100, rotate=False)
    assert path.stat().st_size == 255
    assert not (tmp_path / "relay.log.1").exists()


def test_each_record_is_written_as_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "host.log"
    write_through(path, ["first\nsecond", "third\n"])
    assert path.read_text().splitlines() == ["first", "second", "third"]


def test_install_logging_routes_records_to_the_file_redacted_and_never_to_stdout(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "logs" / "host.log"
    target = logging.getLogger("browy.test.logger")
    target.propagate = False
    handle = install_logging(path, logger=target)
    try:
        target.info("calling with Authorization: Bearer sk-ant-api03-secretsecret")
        target.warning("with %s", {"apiKey": "sk-abcdefghijklmnopqrstu"})
        try:
            raise ValueError("boom")
        except ValueError:
            target.exception("failed")
    finally:
        handle.close()
    text = path.read_text()
    assert "calling with Authorization: [REDACTED]" in text
    assert "secretsecret" not in text
    assert "abcdefghijklmnopqrstu" not in text
    assert "ValueError: boom" in text
    out, _ = capfd.readouterr()
    assert out == ""


def test_the_logging_handler_never_raises_or_prints_after_close(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    target = logging.getLogger("browy.test.closed")
    target.propagate = False
    handle = install_logging(tmp_path / "host.log", logger=target)
    handle.close()
    handle.handler.handle(logging.LogRecord("x", logging.INFO, __file__, 1, "late", None, None))
    out, err = capfd.readouterr()
    assert out == ""
    assert err == ""


def test_an_appending_logger_writes_to_the_new_file_once_its_file_was_rotated(
    tmp_path: Path,
) -> None:
    # The daemon renames relay.log to relay.log.1 while a relay has it open: the relay's next
    # line goes to a new relay.log, not on into the old copy.
    path = tmp_path / "relay.log"
    handle = start_thread_actor(Logger(path, rotate=False), name="logger")
    written = threading.Event()
    handle.post(WriteLines(text="before"), lambda _result, _error: written.set())
    assert written.wait(2.0)
    path.rename(tmp_path / "relay.log.1")
    handle.post(WriteLines(text="after"))
    handle.post(Flush())
    assert handle.stop_and_join(2.0, drain=True)
    assert (tmp_path / "relay.log.1").read_text() == "before\n"
    assert path.read_text() == "after\n"


def test_the_rotating_logger_rotates_the_log_other_processes_append_to(tmp_path: Path) -> None:
    relay_log = tmp_path / "relay.log"
    relay_log.write_text("r" * 99 + "\n")  # 100 bytes: at the limit, kept
    (tmp_path / "relay.log.1").write_text("older\n")
    write_through(tmp_path / "host.log", ["a"], max_bytes=100, others=(relay_log,), check_every_s=0)
    assert relay_log.read_text() == "r" * 99 + "\n"
    with relay_log.open("a") as fh:
        fh.write("one more line\n")  # past the limit
    write_through(tmp_path / "host.log", ["b"], max_bytes=100, others=(relay_log,), check_every_s=0)
    assert not relay_log.exists()  # the relays start the next one when they next write
    assert (tmp_path / "relay.log.1").read_text().endswith("one more line\n")  # exactly one copy
    assert sorted(p.name for p in tmp_path.iterdir()) == ["host.log", "relay.log.1"]


def test_lines_still_queued_when_the_logger_is_stopped_are_written_not_lost(
    tmp_path: Path,
) -> None:
    """A supervisor stops its Logger child without draining (at a relay's exit, say): the lines
    logged just before it — "stdin closed; exiting" — are written all the same."""
    path = tmp_path / "relay.log"
    handle = install_logging(path, logger=logging.getLogger("browy.test.stopped"), rotate=False)
    logger_handle = handle.sink._handle
    assert logger_handle is not None
    gate = threading.Event()
    blocker = Logger(path, max_bytes=1 << 20, rotate=False)
    real_handle = blocker.handle
    blocker.handle = lambda msg: (gate.wait(5), real_handle(msg))[1]  # type: ignore[method-assign]
    held = start_thread_actor(blocker, name="held-logger")
    handle.sink.attach(held)  # the old incarnation drains; the held one takes the next lines
    log = logging.getLogger("browy.test.stopped")
    log.setLevel(logging.INFO)
    for n in range(20):
        log.info("line %d", n)
    held.request_stop()  # as a supervisor does: refuse what is queued
    gate.set()
    handle.close()
    text = path.read_text()
    assert all(f"line {n}" in text for n in range(20)), text
