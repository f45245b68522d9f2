"""``browy mcp --http PORT``: the MCP server over Streamable HTTP, for this machine only.

- Bound to 127.0.0.1, never to another address.
- Every request carries ``Authorization: Bearer <token>``; the token is made once, stored in
  ``BROWY_HOME/mcp-token`` (0600) and printed when it is made. A request without it (or with a
  wrong one) gets 401 before the MCP layer sees it; the comparison is constant-time.
- The SDK's transport security checks ``Host`` and ``Origin`` against this port on 127.0.0.1
  and localhost only (a web page that rebinds a name to 127.0.0.1 is refused).
"""

from __future__ import annotations

import hmac
import secrets
from pathlib import Path
from typing import Any

import orjson
from mcp.server.transport_security import TransportSecuritySettings

from nativehost.mcp.server import BrowyMcp

__all__ = ["TOKEN_FILE", "BearerAuth", "http_app", "load_or_make_token", "token_path"]

TOKEN_FILE = "mcp-token"

Scope = dict[str, Any]


def token_path(home: Path) -> Path:
    return home / TOKEN_FILE


def load_or_make_token(home: Path) -> tuple[str, bool]:
    """The HTTP server's bearer token, and whether it was just made (then it is printed)."""
    from actors.runtime.private_files import write_private

    path = token_path(home)
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        token = ""
    if len(token) >= 32:
        path.chmod(0o600)
        return token, False
    token = secrets.token_urlsafe(32)
    write_private(path, token + "\n")
    return token, True


class BearerAuth:
    """ASGI middleware: HTTP requests without the bearer token get 401 (lifespan passes)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            body = orjson.dumps(
                {"error": "unauthorized", "detail": "send Authorization: Bearer <mcp-token>"}
            )
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="browy"'),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        for key, value in scope.get("headers", ()):
            if key == b"authorization":
                scheme, _, cred = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(
                    cred.strip(), self._token
                )
        return False


def http_app(mcp: BrowyMcp, *, port: int, token: str) -> Any:
    """The ASGI app: the SDK's Streamable HTTP app at ``/mcp`` behind :class:`BearerAuth`."""
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"127.0.0.1:{port}", f"localhost:{port}"],
        allowed_origins=[f"http://127.0.0.1:{port}", f"http://localhost:{port}"],
    )
    app = mcp.server.streamable_http_app(
        streamable_http_path="/mcp", transport_security=security, host="127.0.0.1"
    )
    return BearerAuth(app, token)


async def serve_http(mcp: BrowyMcp, *, port: int, token: str) -> None:
    """Serve on 127.0.0.1:*port* until cancelled (or stopped by a signal)."""
    import uvicorn

    config = uvicorn.Config(
        http_app(mcp, port=port, token=token),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
    )
    try:
        await uvicorn.Server(config).serve()
    finally:
        await mcp.close()
