"""The Logger: redaction, rotation with one old copy, whole lines, never stdout."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from actors.runtime.logger import Flush, Logger, WriteLines, install_logging
from actors.runtime.redaction import redact
from actors.runtime.thread_actor import start_thread_actor


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("using key sk-proj-abcdefghijklmnop1234", "abcdefghijklmnop1234"),
        ("anthropic sk-ant-api03-AbCdEfGhIjKlMnOp_qr", "AbCdEfGhIjKlMnOp_qr"),
        ("headers: Bearer eyJhbGciOi.JIUzI1NiJ9-x", "eyJhbGciOi"),
        ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
        ("Cookie: sid=12345; theme=dark", "sid=12345"),
        ("Set-Cookie: session=s3cr3t; HttpOnly", "s3cr3t"),
        ('{"apiKey": "key-123456", "model": "gpt"}', "key-123456"),
        ("{'api_key': 'key-123456'}", "key-123456"),
        ("GET /v1?api_key=key-123456&x=1", "key-123456"),
        ('{"cookie": "a=b; c=d", "url": "https://x"}', "a=b; c=d"),
    ],
)
def test_redact_removes_each_kind_of_secret(text: str, secret: str) -> None:
    cleaned = redact(text)
    assert secret not in cleaned
    assert "[REDACTED]" in cleaned


def test_redact_keeps_what_is_not_secret() -> None:
    assert (
        redact('{"model": "gpt-4o", "url": "https://x"}')
        == '{"model": "gpt-4o", "url": "https://x"}'
    )
    assert redact("task-12345 finished") == "task-12345 finished"
    cleaned = redact('{"apiKey": "k-1", "model": "gpt"}')
    assert '"model": "gpt"' in cleaned


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
