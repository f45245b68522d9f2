"""Builders for scripted-model-server steps, and a context that runs server + gateway.

The step dicts are exactly the JSON script format of :mod:`nativehost.demo.model_script`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from actors.model.openai_gateway import ModelGateway
from actors.model.types import ModelSettings
from nativehost.demo.model_server import ScriptedModelServer

__all__ = [
    "disconnect",
    "fast_settings",
    "gateway_and_server",
    "hang",
    "status",
    "step",
    "tool_call",
]


def step(text: str | list[str] | None = None, **fields: Any) -> dict[str, Any]:
    """A step answering *text* (a list: exactly these chunks), plus any other step keys."""
    out: dict[str, Any] = dict(fields)
    if text is not None:
        out["text"] = text
    return out


def tool_call(name: str, arguments: Mapping[str, Any] | str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, **fields}


def status(
    code: int, *, retry_after: float | str | None = None, after_chunks: int = 0
) -> dict[str, Any]:
    fault: dict[str, Any] = {"kind": "status", "status": code, "after_chunks": after_chunks}
    if retry_after is not None:
        fault["retry_after"] = retry_after
    return fault


def disconnect(after_chunks: int = 0) -> dict[str, Any]:
    return {"kind": "disconnect", "after_chunks": after_chunks}


def hang(after_chunks: int = 0) -> dict[str, Any]:
    return {"kind": "hang", "after_chunks": after_chunks}


def fast_settings(base_url: str, **overrides: Any) -> ModelSettings:
    """Settings with short backoff and timeouts, so fault tests run in well under a second."""
    settings = ModelSettings(
        base_url=base_url,
        api_key="sk-test",
        model="browy-scripted",
        connect_timeout=2.0,
        stream_idle_timeout=3.0,
        max_attempts=3,
        retry_initial_backoff=0.02,
        retry_max_backoff=0.1,
        retry_after_cap=2.0,
    )
    return replace(settings, **overrides)


@asynccontextmanager
async def gateway_and_server(
    script: list[dict[str, Any]] | dict[str, Any] | None, **overrides: Any
) -> AsyncIterator[tuple[ModelGateway, ScriptedModelServer]]:
    """Start a :class:`ScriptedModelServer` on 127.0.0.1:0 and a gateway pointed at it."""
    server = ScriptedModelServer(script)
    url = await server.start()
    gateway = ModelGateway(fast_settings(url, **overrides))
    try:
        yield gateway, server
    finally:
        await gateway.aclose()
        await server.stop()
